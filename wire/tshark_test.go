package wire_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/pcapio"
	"github.com/fastcnp/fastcnp/wire"
)

// TestTshark writes a pcap of the frames fastcnp builds and checks that
// Wireshark's dissectors read them as intended: PFC/PAUSE as MAC control
// with the right class-enable vector and quanta, RoCEv2 data/ACK/CNP as
// InfiniBand with the right opcode and DestQP, valid IPv4 (and UDP)
// checksums, and the ICRC field where Wireshark expects it. Wireshark 4.0
// displays the ICRC but cannot verify it; the ICRC algorithm is pinned
// against a ConnectX-4 Lx capture in icrc_test.go instead.
func TestTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install -y tshark); skipping the Wireshark cross-check")
	}
	mA, mB := wire.MAC{2, 0, 0, 0, 0, 1}, wire.MAC{2, 0, 0, 0, 0, 2}
	ipA, ipB := wire.Addr4{10, 0, 0, 1}, wire.Addr4{10, 0, 0, 2}
	fwd := wire.Envelope{DstMAC: mB, SrcMAC: mA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: wire.ECT0, SrcPort: 0xc123, DontFragment: true}
	rev := wire.Envelope{DstMAC: mA, SrcMAC: mB, SrcIP: ipB, DstIP: ipA, DSCP: 48, SrcPort: 0xc123, DontFragment: true}
	vlan := fwd
	vlan.VLAN, vlan.PCP, vlan.VID = true, 3, 100

	type want struct {
		fields map[string]string
	}
	var frames [][]byte
	var wants []want
	add := func(w map[string]string, build func(b []byte) (int, error)) {
		t.Helper()
		b := make([]byte, 2048)
		n, err := build(b)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b[:n])
		wants = append(wants, want{w})
	}
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x000111, AckReq: true, PSN: 1000}
	payload := bytes.Repeat([]byte{0x5a}, 256)
	add(map[string]string{"infiniband.bth.opcode": "4", "infiniband.bth.destqp": "0x000111", "infiniband.bth.psn": "1000",
		"infiniband.bth.a": "1", "udp.dstport": "4791", "ip.dsfield.dscp": "26", "ip.dsfield.ecn": "2", "ip.checksum.status": "1"},
		func(b []byte) (int, error) { return wire.BuildRoCE(b, &fwd, &bth, payload) })
	add(map[string]string{"infiniband.bth.opcode": "4", "infiniband.bth.destqp": "0x000111", "vlan.priority": "3", "vlan.id": "100"},
		func(b []byte) (int, error) { return wire.BuildRoCE(b, &vlan, &bth, payload) })
	ack := wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000222, PSN: 1000}
	add(map[string]string{"infiniband.bth.opcode": "17", "infiniband.bth.destqp": "0x000222",
		"infiniband.aeth.syndrome": "31", "infiniband.aeth.msn": "7"},
		func(b []byte) (int, error) {
			return wire.BuildRCAck(b, &rev, ack, wire.AETH{Syndrome: wire.SyndromeACK, MSN: 7})
		})
	cnp := wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000333}
	ext := wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch, SwitchID: 7, Window: 65536, Port: 12, QueueBytes: 100000}
	add(map[string]string{"infiniband.bth.opcode": "129", "infiniband.bth.destqp": "0x000333", "ip.dsfield.dscp": "48",
		"ip.dsfield.ecn": "0", "ip.checksum.status": "1", "infiniband.vendor": "*cnp"},
		func(b []byte) (int, error) { return wire.BuildCNP(b, &rev, cnp, &ext) })
	add(map[string]string{"macc.opcode": "0x0101", "macc.cbfc.enbv": "0x0008", "macc.cbfc.pause_time.c3": "65535",
		"macc.cbfc.pause_time.c0": "0", "eth.dst": "01:80:c2:00:00:01"},
		func(b []byte) (int, error) { return wire.BuildPFC(b, mA, 1<<3, [8]uint16{3: 0xffff}) })
	add(map[string]string{"macc.opcode": "0x0101", "macc.cbfc.enbv": "0x0008", "macc.cbfc.pause_time.c3": "0"},
		func(b []byte) (int, error) { return wire.BuildPFCXON(b, mA, 1<<3) })
	add(map[string]string{"macc.opcode": "0x0001", "macc.pause_time": "512"},
		func(b []byte) (int, error) { return wire.BuildPause(b, mA, 512) })
	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort, ann.SenderQPN, ann.ReceiverQPN = ipA, ipB, 0xc123, 0x333, 0x111
	add(map[string]string{"udp.dstport": "4792", "udp.length": "40", "udp.checksum.status": "1", "ip.checksum.status": "1"},
		func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &ann) })

	path := filepath.Join(t.TempDir(), "fastcnp.pcap")
	if p := os.Getenv("FASTCNP_PCAP_OUT"); p != "" {
		path = p
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := pcapio.NewWriter(fh, pcapio.Options{Nanosecond: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for i, f := range frames {
		if err := pw.WritePacket(t0.Add(time.Duration(i)*time.Microsecond), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}

	names := []string{"frame.protocols", "infiniband.invariant.crc", "_ws.expert.severity"}
	seen := map[string]bool{}
	for _, w := range wants {
		for k := range w.fields {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	args := []string{"-r", path, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, n := range names {
		args = append(args, "-e", n)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v\n%s", args, err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames:\n%s", len(lines), len(frames), out)
	}
	for i, line := range lines {
		cols := strings.Split(line, "\t")
		got := map[string]string{}
		for j, n := range names {
			if j < len(cols) {
				got[n] = cols[j]
			}
		}
		t.Logf("frame %d: %s", i+1, got["frame.protocols"])
		for k, v := range wants[i].fields {
			if v == "*cnp" {
				// Wireshark 4.0 knows no CNP layout (opcode 129 "Unknown"):
				// it shows a 4-byte vendor header, then all the bytes after
				// the BTH as vendor data: exactly extension + ICRC.
				f := frames[i]
				rest := f[len(f)-wire.CNPExtLen-wire.ICRCLen:]
				v = hexBytes(rest[:4]) + "," + hexBytes(rest)
			}
			if got[k] != v {
				t.Errorf("frame %d (%s): %s = %q, want %q", i+1, got["frame.protocols"], k, got[k], v)
			}
		}
		if op := wants[i].fields["infiniband.bth.opcode"]; op != "" {
			if !strings.Contains(got["frame.protocols"], "infiniband") {
				t.Errorf("frame %d not dissected as InfiniBand: %s", i+1, got["frame.protocols"])
			}
			// Wireshark shows the last 4 bytes of the IPv4 packet as the
			// ICRC (it reads them big-endian): our framing puts it there.
			f := frames[i]
			var fr wire.Frame
			if err := wire.Parse(f, wire.ParseOptions{}, &fr); err != nil {
				t.Fatal(err)
			}
			end := fr.Off[wire.LayerIPv4] + int(fr.IPv4.TotalLen)
			wantCRC := "0x" + hexBytes(f[end-4:end])
			if op != "129" && got["infiniband.invariant.crc"] != wantCRC {
				t.Errorf("frame %d: Wireshark ICRC %q, want %q", i+1, got["infiniband.invariant.crc"], wantCRC)
			}
		}
		if strings.Contains(got["frame.protocols"], "macc") && !strings.Contains(got["frame.protocols"], "eth:ethertype:macc") {
			t.Errorf("frame %d: protocols %s", i+1, got["frame.protocols"])
		}
		// Wireshark's expert info must not flag errors (severity 8388608 =
		// PI_ERROR, 6291456 = PI_WARN).
		for _, s := range strings.Split(got["_ws.expert.severity"], ",") {
			if s == "8388608" || s == "6291456" {
				t.Errorf("frame %d: expert info severity %s", i+1, s)
			}
		}
	}
	// The PFC frame is MAC control "Class Based Flow Control" in -V output.
	v, err := exec.Command(tshark, "-r", path, "-V", "-Y", "macc.opcode == 0x0101").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	if !strings.Contains(string(v), "Class Based Flow Control") {
		t.Errorf("tshark -V does not name the PFC opcode Class Based Flow Control:\n%s", v)
	}
}

func hexBytes(b []byte) string { return hex.EncodeToString(b) }
