package portcfg

import (
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/p4src"
)

// base is the port of the conformance vectors (include/fastcnp.inc): 100 Gb/s, Qth
// 2000 B, Tcheck and RTTbase 8 us, cnpGap 4 us.
func base() Settings {
	return Settings{Port: 2, SwitchID: 7, LinkRateBps: 100e9, QthBytes: 2000, Tcheck: 8 * time.Microsecond,
		CNPGap: 4 * time.Microsecond, RTTBase: 8 * time.Microsecond, Mode: p4src.PortModeFastcnp,
		REDKminBytes: 5000, REDKmaxBytes: 200_000, REDPmax: 0.01, MTUBytes: 1024, LosslessPriority: 3}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Settings)
		want    Params
		wantErr string
	}{
		{name: "conformance port", edit: func(*Settings) {},
			want: Params{Port: 2, RateBytesPerMs: 12_500_000, QthBytes: 2000, TcheckNs: 8000, CNPGapNs: 4000,
				Mode: p4src.PortModeFastcnp, REDKminBytes: 5000, REDKmaxBytes: 200_000, REDPmaxQ16: 655, RTTBaseNs: 8000,
				BDPBytes: 100_000, BDPLog2Q6: 1063, MTUBytes: 1024, PauseQuantumPs: 5120, SwitchID: 7, LosslessPriority: 3}},
		{name: "400G ablation mode", edit: func(s *Settings) { s.LinkRateBps, s.Mode = 400e9, p4src.PortModeFastcnpNoPFCState },
			want: Params{Port: 2, RateBytesPerMs: 50_000_000, QthBytes: 2000, TcheckNs: 8000, CNPGapNs: 4000,
				Mode: p4src.PortModeFastcnpNoPFCState, REDKminBytes: 5000, REDKmaxBytes: 200_000, REDPmaxQ16: 655,
				RTTBaseNs: 8000, BDPBytes: 400_000, BDPLog2Q6: 1191, MTUBytes: 1024, PauseQuantumPs: 1280, SwitchID: 7,
				LosslessPriority: 3}},
		{name: "switch ID", edit: func(s *Settings) { s.SwitchID = 1 << 16 }, wantErr: "switch_id"},
		{name: "mode", edit: func(s *Settings) { s.Mode = p4src.PortModeInt + 1 }, wantErr: "not a port mode"},
		{name: "slow link", edit: func(s *Settings) { s.LinkRateBps = 7999 }, wantErr: "below 8000"},
		{name: "negative gap", edit: func(s *Settings) { s.CNPGap = -1 }, wantErr: "cnp_gap"},
		{name: "tcheck 32 bits", edit: func(s *Settings) { s.Tcheck = 5 * time.Second }, wantErr: "tcheck"},
		{name: "mtu 16 bits", edit: func(s *Settings) { s.MTUBytes = 1 << 16 }, wantErr: "mtu"},
		{name: "priority", edit: func(s *Settings) { s.LosslessPriority = 8 }, wantErr: "priority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(&s)
			got, err := Compute(s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Compute error = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Compute:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPmaxQ16(t *testing.T) {
	for _, tt := range []struct {
		p    float64
		want uint16
	}{{1, 65535}, {0.5, 32768}, {0.01, 655}, {0.2, 13107}, {-0.1, 0}} {
		if got := PmaxQ16(tt.p); got != tt.want {
			t.Errorf("PmaxQ16(%v) = %d, want %d", tt.p, got, tt.want)
		}
	}
}
