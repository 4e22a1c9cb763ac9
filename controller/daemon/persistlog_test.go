package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

func fileConn(i int, qpn uint32) fileConnection {
	return fileConnection{SenderIP: fmt.Sprintf("10.1.0.%d", i), UDPSrcPort: uint16(i), ReceiverQPN: uint32(i),
		SenderQPN: qpn, Index: uint16(i), Source: "announce"}
}

// writeStateAndLog writes a snapshot of generation gen with conns, and the
// log text after it.
func writeStateAndLog(t *testing.T, path string, gen uint64, conns []fileConnection, log string) {
	t.Helper()
	if err := saveStateFile(path, &fileState{Version: stateVersion, Connections: conns, LogGeneration: gen}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath(path), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
}

func logLine(t *testing.T, op string, fc fileConnection) string {
	t.Helper()
	return fmt.Sprintf(`{"op":%q,"conn":{"sender_ip":%q,"udp_src_port":%d,"receiver_qpn":%d,"sender_qpn":%d,"conn_index":%d,"source":"announce","last_seen":"2030-01-02T03:04:05Z"}}`+"\n",
		op, fc.SenderIP, fc.UDPSrcPort, fc.ReceiverQPN, fc.SenderQPN, fc.Index)
}

// qpns returns the sender QPN of each connection by UDP source port.
func qpns(fs *fileState) map[uint16]uint32 {
	out := map[uint16]uint32{}
	for _, c := range fs.Connections {
		out[c.UDPSrcPort] = c.SenderQPN
	}
	return out
}

// TestStateLogReplay: the log's changes apply to the snapshot of its
// generation in order (put adds or replaces, del removes); a log of
// another generation (a crash between a compaction's snapshot and its new
// log) is ignored.
func TestStateLogReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	log := `{"op":"gen","gen":3}` + "\n" + logLine(t, opPut, fileConn(2, 20)) + logLine(t, opDelete, fileConn(1, 0)) +
		logLine(t, opPut, fileConn(4, 40)) + logLine(t, opPut, fileConn(5, 50)) + logLine(t, opDelete, fileConn(5, 0)) +
		logLine(t, opPut, fileConn(4, 41)) + logLine(t, opDelete, fileConn(9, 0)) // unknown: nothing
	writeStateAndLog(t, path, 3, []fileConnection{fileConn(1, 10), fileConn(2, 11), fileConn(3, 30)}, log)
	fs, warnings, err := readState(path)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("readState: %v, warnings %v", err, warnings)
	}
	if got, want := fmt.Sprint(qpns(fs)), fmt.Sprint(map[uint16]uint32{2: 20, 3: 30, 4: 41}); got != want {
		t.Errorf("replayed connections %s, want %s", got, want)
	}
	writeStateAndLog(t, path, 4, []fileConnection{fileConn(1, 10)}, log)
	fs, warnings, err = readState(path)
	if err != nil || len(warnings) != 0 || len(fs.Connections) != 1 || fs.Connections[0].SenderQPN != 10 {
		t.Errorf("log of generation 3 on a snapshot of 4: %+v, %v, warnings %v; want the snapshot alone", fs, err, warnings)
	}
}

// TestStateLogTornRecord: a crash in the middle of an append leaves a torn
// last record: it is ignored with a warning, never a failed start; an
// unreadable record before the last is corruption, and fastcnpd refuses
// to start on it.
func TestStateLogTornRecord(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	head := `{"op":"gen","gen":1}` + "\n" + logLine(t, opPut, fileConn(7, 70))
	for _, tt := range []struct{ name, tail, warning string }{
		{"torn", `{"op":"put","conn":{"sender_ip":"10.1.0.8","udp_src`, "the last record is torn"},
		{"unreadable last line", "\x00\x00\x00\x00\n", "the last record is unreadable"},
	} {
		writeStateAndLog(t, state, 1, []fileConnection{fileConn(1, 10)}, head+tt.tail)
		fs, warnings, err := readState(state)
		if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], tt.warning) {
			t.Fatalf("%s: %v, warnings %q; want one warning %q", tt.name, err, warnings, tt.warning)
		}
		if got, want := fmt.Sprint(qpns(fs)), fmt.Sprint(map[uint16]uint32{1: 10, 7: 70}); got != want {
			t.Errorf("%s: connections %s, want %s", tt.name, got, want)
		}
		d, err := New(Options{Config: cfg, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("%s: start: %v", tt.name, err)
		}
		if n := len(d.Connections()); n != 2 {
			t.Errorf("%s: %d connections after the start, want 2", tt.name, n)
		}
	}
	writeStateAndLog(t, state, 1, []fileConnection{fileConn(1, 10)}, head+"garbage\n"+logLine(t, opPut, fileConn(8, 80)))
	if _, err := New(Options{Config: cfg, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "state log") {
		t.Errorf("start on a log corrupt before its last record: %v, want a state log error", err)
	}
}

// TestAnnouncementLogged: an accepted announcement is appended to the log
// (the snapshot is not rewritten) before HandleAnnouncement returns; the
// final write of a stopping primary compacts the log into the snapshot.
func TestAnnouncementLogged(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, testConfig(t, state, s1, s2), nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	if res := announceUp(t, d.Daemon); res.Reason != AcceptUp { // the first change compacts: a new generation
		t.Fatalf("up: %+v", res)
	}
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort+1, connDestQP, nil))
	if res.Reason != AcceptUp {
		t.Fatalf("second up: %+v", res)
	}
	after, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the snapshot was rewritten for an announcement")
	}
	fs, _, err := readState(state)
	if err != nil || len(fs.Connections) != 2 {
		t.Fatalf("state after two announcements: %+v, %v; want 2 connections", fs, err)
	}
	d.stopNow()
	snap, err := loadStateFile(state)
	if err != nil || len(snap.Connections) != 2 {
		t.Fatalf("snapshot after the stop: %+v, %v; want the 2 connections", snap, err)
	}
	if fs, _, err := readState(state); err != nil || len(fs.Connections) != 2 {
		t.Errorf("state after the stop: %+v, %v", fs, err)
	}
}

// TestAnnouncementBurstKept: a burst of announcements punted by the switch
// (2,000 for 1,000 connections, each announced twice with a new sender
// QPN) is absorbed: none is dropped, every connection is installed as
// last announced, and a crash right after loses none of them.
func TestAnnouncementBurstKept(t *testing.T) {
	const n, conns = 2000, 1000
	s := startBurstSwitch(t)
	state := filepath.Join(t.TempDir(), "state.json")
	cfg, err := config.Parse([]byte(fmt.Sprintf(burstYAML, state, s.addr)))
	if err != nil {
		t.Fatal(err)
	}
	d := startCrashingDaemon(t, cfg, nil)
	waitFor(t, "initial install", syncTimeout, func() bool {
		st := d.Switches()
		return len(st) == 1 && st[0].Primary && st[0].Entries > 0 && s.count(p4src.TableWindowExp2) == 2048
	})
	ctx := context.Background()
	for _, f := range burstFramesN(t, n, conns) {
		if err := s.dp.Receive(ctx, f, 1); err != nil {
			t.Fatal(err)
		}
	}
	accepted := func() float64 {
		return testutil.ToFloat64(d.metrics.announcements.WithLabelValues("accepted", AcceptUp))
	}
	waitFor(t, "burst handled", time.Minute, func() bool { return accepted() == n })
	waitFor(t, "burst installed", time.Minute, func() bool { return burstInstalledN(s, n, conns) == conns })
	if drops := testutil.ToFloat64(d.metrics.packetInsDrop.WithLabelValues("s1")); drops != 0 || s.dp.PacketInDrops() != 0 {
		t.Errorf("packet-ins dropped: %v by fastcnpd, %d by the switch", drops, s.dp.PacketInDrops())
	}
	d.stopNow() // a crash: no final write
	fs, warnings, err := readState(state)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("state after the crash: %v, warnings %v", err, warnings)
	}
	if len(fs.Connections) != conns {
		t.Fatalf("state after the crash holds %d connections, want %d", len(fs.Connections), conns)
	}
	for _, fc := range fs.Connections {
		i := int(fc.UDPSrcPort) - 1000
		if want := burstFinalQPN(i, n, conns); fc.SenderQPN != want {
			t.Fatalf("connection %d saved with sender QPN %d, want %d", i, fc.SenderQPN, want)
		}
	}
	b := startDaemon(t, cfg, nil)
	if got := len(b.Connections()); got != conns {
		t.Errorf("restarted with %d connections, want %d", got, conns)
	}
}
