package daemon

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/etcdtest"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/fastcnp/fastcnp/wire"
)

// The burst of BenchmarkAnnouncementBurst: burstAnnouncements valid "up"
// announcements for burstConns connections (the data plane holds
// CONN_TABLE_SIZE = 4096), announced in rounds: round 0 adds every
// connection, later rounds change its sender QPN (a QP re-created), so
// that every announcement changes the state: it is persisted and
// installed (an insert, then modifies).
const (
	burstAnnouncements = 10000
	burstConns         = 4000
	burstQueue         = 16384 // the in-process switch's packet-in queues
)

const burstYAML = `
api: {auth: {insecure: true}}
state_file: %s
metrics: {listen: ""}
announce: {udp_port: 4792, idle_timeout: 1h, max_connections_per_port: 4096, max_connections_per_sender: 4096}
switches:
  - name: s1
    address: %s
    device_id: 1
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:01:01", subnets: [10.0.0.0/8]}
`

// burstFrames returns the frames of the burst: announcement k is for
// connection k % burstConns with sender QPN k / burstConns + 1.
func burstFrames(b testing.TB) [][]byte {
	return burstFramesN(b, burstAnnouncements, burstConns)
}

// burstFramesN is burstFrames for n announcements of conns connections.
func burstFramesN(b testing.TB, n, conns int) [][]byte {
	return burstFramesSigned(b, n, conns, nil, time.Time{})
}

// burstKey is the key of the authenticated bursts: key ID 1, allowed for
// every sender of the burst (burstKeyFile).
var burstKey = []byte("burst-announcement-key-012345678")

// burstKeyFile writes announce.auth's key file of the authenticated bursts.
func burstKeyFile(b testing.TB) string {
	p := filepath.Join(b.TempDir(), "announce-keys")
	if err := os.WriteFile(p, []byte("1 burst "+hex.EncodeToString(burstKey)+" 10.0.0.0/8\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// burstFramesSigned is burstFramesN, the frames authenticated with key
// (nil: not) at timestamps t0 + k ns.
func burstFramesSigned(b testing.TB, n, conns int, key []byte, t0 time.Time) [][]byte {
	out := make([][]byte, n)
	for k := range out {
		i := k % conns
		ip := wire.Addr4{10, 1, byte(i >> 8), byte(i)}
		a := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
		a.SenderIP, a.ReceiverIP = ip, wire.Addr4{10, 2, 1, 9}
		a.UDPSrcPort, a.ReceiverQPN, a.SenderQPN = uint16(1000+i), uint32(i+1), uint32(k/conns+1)
		env := &wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9}, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1},
			SrcIP: ip, DstIP: wire.Addr4{10, 2, 1, 9}, SrcPort: 5000}
		buf := make([]byte, 128)
		var auth *wire.AnnounceAuth
		if key != nil {
			auth = &wire.AnnounceAuth{Type: wire.AnnounceAuthHMACSHA256, KeyID: 1, Timestamp: uint64(t0.UnixNano()) + uint64(k), Nonce: uint64(k)}
		}
		n, err := wire.BuildSignedAnnouncement(buf, env, &a, auth, key)
		if err != nil {
			b.Fatal(err)
		}
		out[k] = buf[:n]
	}
	return out
}

// burstInstalled reports how many connections of the burst the switch
// holds with their final sender QPN.
func burstInstalled(s *testSwitch) int { return burstInstalledN(s, burstAnnouncements, burstConns) }

// burstFinalQPN is the sender QPN connection i was last announced with
// (burstFramesN(n, conns)).
func burstFinalQPN(i, n, conns int) uint32 { return uint32((n-1-i)/conns + 1) }

// burstInstalledN is burstInstalled for burstFramesN(n, conns).
func burstInstalledN(s *testSwitch, n, conns int) int {
	want := map[uint64]int{} // final sender QPN -> connections
	for i := 0; i < conns; i++ {
		want[uint64(burstFinalQPN(i, n, conns))]++
	}
	got := map[uint64]int{}
	for _, e := range s.entries(p4src.TableRDMAConnection) {
		for _, p := range e.Action.Params {
			if p.ID == 1 { // set_connection(sender_qpn)
				got[p.Value]++
			}
		}
	}
	installed := 0
	for q, w := range want {
		installed += min(w, got[q])
	}
	return installed
}

// startBurstSwitch is startSwitch with packet-in queues that take the whole
// burst (the data plane's channel and the server's stream queue), so that
// what is measured is fastcnpd.
func startBurstSwitch(b testing.TB) *testSwitch {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{PacketInQueue: burstQueue})
	srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: 1, DataPlane: dp, Logger: quietLogger(), StreamQueue: burstQueue,
		GRPCOptions: []grpc.ServerOption{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testSwitch{t: b, addr: lis.Addr().String(), deviceID: 1, dp: dp, srv: srv, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = srv.Serve(ctx, lis)
	}()
	b.Cleanup(s.stop)
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAnnouncementBurst measures a burst of 10,000 valid
// announcements (4,000 connections; see burstAnnouncements) against one
// in-process fastcnp-switch with a state file on disk. One op = the whole
// burst, from the first announcement until the switch holds every
// connection as last announced.
//
//   - path=packet-in: the switch punts every frame (dp.Receive on port 1,
//     as fastcnp-switch does for a host's announcement), through the
//     P4Runtime stream, the p4rt client and the switch runner.
//   - path=batch: the frames are handed to the switch runner's handler in
//     batches of maxAnnounceBatch, as the runner does when packet-ins wait
//     (the handler's own cost, no packet-in transport).
//   - path=packet-in-auth: path=packet-in with authenticated announcements
//     (announce.auth with one key for every sender; each frame's tag,
//     timestamp and replay cache checked).
//
// Reported: ns/announcement (wall time of the burst until installed, per
// announcement), handled-ms (until every announcement was handled),
// installed-ms, cpu-us/announcement (the whole process, switch included),
// installed (connections on the switch as last announced, of 4,000),
// entries (rdma_connection entries on the switch), dropped (packet-ins
// lost, by fastcnpd or the switch).
//
// store=etcd is path=packet-in with the state in etcd (HA mode: one member
// on loopback, its data on the same disk) instead of the state file.
func BenchmarkAnnouncementBurst(b *testing.B) {
	frames := burstFrames(b)
	for _, tc := range []struct{ store, path string }{{"file", "packet-in"}, {"file", "batch"}, {"file", "packet-in-auth"},
		{"etcd", "packet-in"}} {
		name := "path=" + tc.path
		if tc.store != "file" {
			name = "store=" + tc.store + "/" + name
		}
		path := tc.path
		b.Run(name, func(b *testing.B) {
			var etcd *etcdtest.Cluster
			if tc.store == "etcd" {
				etcd = etcdtest.Start(b, etcdtest.Options{})
			}
			var handled, installedAt, cpu time.Duration
			var installed, entries, dropped float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := startBurstSwitch(b)
				src := fmt.Sprintf(burstYAML, filepath.Join(b.TempDir(), "state.json"), s.addr)
				frames := frames
				if path == "packet-in-auth" {
					src = strings.Replace(src, "max_connections_per_sender: 4096}",
						"max_connections_per_sender: 4096, auth: {key_file: "+burstKeyFile(b)+"}}", 1)
					frames = burstFramesSigned(b, burstAnnouncements, burstConns, burstKey, time.Now())
				}
				cfg, err := config.Parse([]byte(src))
				if err != nil {
					b.Fatal(err)
				}
				if etcd != nil {
					cfg.HA = &config.HA{Etcd: config.Etcd{Endpoints: etcd.Endpoints, Prefix: fmt.Sprintf("/bench-%d/", i),
						LeaseTTL: config.DefaultEtcdLeaseTTL}}
				}
				d := startDaemon(b, cfg, func(o *Options) { o.Now = time.Now })
				waitFor(b, "initial install", time.Minute, func() bool {
					st := d.Switches()
					return len(st) == 1 && st[0].Primary && st[0].Entries > 0 && s.count(p4src.TableWindowExp2) == 2048
				})
				accepted := func() float64 {
					return testutil.ToFloat64(d.metrics.announcements.WithLabelValues("accepted", AcceptUp))
				}
				ctx := context.Background()
				cpu0 := cpuTime()
				start := time.Now()
				b.StartTimer()
				if path == "batch" {
					for i := 0; i < len(frames); i += maxAnnounceBatch {
						batch := make([]punted, 0, maxAnnounceBatch)
						for _, f := range frames[i:min(i+maxAnnounceBatch, len(frames))] {
							batch = append(batch, punted{port: 1, reason: wire.ReasonAnnouncement, frame: f})
						}
						d.handleAnnouncements("s1", batch)
					}
				} else {
					for _, f := range frames {
						if err := s.dp.Receive(ctx, f, 1); err != nil {
							b.Fatal(err)
						}
					}
				}
				drops := func() float64 { return testutil.ToFloat64(d.metrics.packetInsDrop.WithLabelValues("s1")) }
				for deadline := time.Now().Add(2 * time.Minute); accepted()+drops() < burstAnnouncements &&
					s.dp.PacketInDrops() == 0 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				handled += time.Since(start)
				// Until every connection is installed as last announced, or
				// (announcements lost) nothing has changed for 500 ms.
				n, last, since := 0, -1, time.Now()
				for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if n = burstInstalled(s); n == burstConns {
						break
					}
					if n != last {
						last, since = n, time.Now()
					} else if time.Since(since) > 500*time.Millisecond {
						break
					}
				}
				b.StopTimer()
				installedAt += time.Since(start)
				cpu += cpuTime() - cpu0
				installed += float64(n)
				entries += float64(s.count(p4src.TableRDMAConnection))
				dropped += drops() + float64(s.dp.PacketInDrops())
				d.stopNow()
			}
			N := float64(b.N)
			b.ReportMetric(float64(installedAt.Nanoseconds())/N/burstAnnouncements, "ns/announcement")
			b.ReportMetric(float64(handled.Milliseconds())/N, "handled-ms")
			b.ReportMetric(float64(installedAt.Milliseconds())/N, "installed-ms")
			b.ReportMetric(float64(cpu.Microseconds())/N/burstAnnouncements, "cpu-us/announcement")
			b.ReportMetric(installed/N, "installed")
			b.ReportMetric(entries/N, "entries")
			b.ReportMetric(dropped/N, "dropped")
		})
	}
}
