package daemon

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/p4src"
)

const (
	benchSwitches = 4
	benchConns    = 2500 // x 4 switches = 10,000 rdma_connection entries
)

// BenchmarkInstallConnections measures how fast fastcnpd installs 10,000
// rdma_connection entries (2,500 connections on each of 4 in-process
// switches over loopback gRPC): the desired state is recomputed, diffed
// against the installed state and written, batched (500 updates per
// WriteRequest) or not (1 per request). One op = the whole 10,000.
func BenchmarkInstallConnections(b *testing.B) {
	for _, chunk := range []int{1, 500} {
		b.Run(fmt.Sprintf("batch=%d", chunk), func(b *testing.B) {
			benchInstall(b, chunk)
		})
	}
}

func benchInstall(b *testing.B, chunk int) {
	var sws []*testSwitch
	yaml := fmt.Sprintf("api: {auth: {insecure: true}}\nstate_file: %s\nmetrics: {listen: \"\"}\nswitches:\n",
		filepath.Join(b.TempDir(), "state.json"))
	for i := 0; i < benchSwitches; i++ {
		s := startSwitch(b, "", uint64(i+1))
		sws = append(sws, s)
		yaml += fmt.Sprintf("  - {name: s%d, address: %q, device_id: %d, tls: {insecure: true}, ports: [{port: 1, mac: \"02:00:00:00:00:01\"}]}\n",
			i+1, s.addr, i+1)
	}
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	d := startDaemon(b, cfg, func(o *Options) { o.ChunkSize = chunk })
	waitFor(b, "initial install", time.Minute, func() bool {
		for _, st := range d.Switches() {
			if !st.Primary || st.Entries == 0 || st.LastError != "" {
				return false
			}
		}
		for _, s := range sws {
			if s.count(p4src.TableWindowExp2) != 2048 {
				return false
			}
		}
		return true
	})
	conns := make([]fabric.Connection, benchConns)
	for i := range conns {
		conns[i] = fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}),
			UDPSrcPort: uint16(i), ReceiverQPN: uint32(i)}, SenderQPN: uint32(i), Flags: p4src.ConnFlagCNPTarget,
			Static: true, Source: "api"}
	}
	setAll := func(n int) {
		d.mu.Lock()
		for _, c := range d.conns.List() {
			_, _ = d.conns.Remove(c.ConnKey)
		}
		for _, c := range conns[:n] {
			if _, _, err := d.conns.Upsert(c); err != nil {
				b.Fatal(err)
			}
		}
		d.mu.Unlock()
		d.kickAll()
		waitFor(b, "connections installed", 5*time.Minute, func() bool {
			for _, s := range sws {
				if s.count(p4src.TableRDMAConnection) != n {
					return false
				}
			}
			return true
		})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		setAll(benchConns)
		b.StopTimer()
		setAll(0)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(benchConns*benchSwitches*b.N)/b.Elapsed().Seconds(), "entries/s")
}
