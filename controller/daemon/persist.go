package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// The state file is a snapshot plus an append-only log of the connection
// changes since (state_file + ".log", docs/controller.md "State file"):
// one JSON record per line, the first of which names the snapshot
// generation the log continues. A change appends its records and fsyncs
// the log once for all the announcements handled together (group commit),
// instead of rewriting the whole snapshot; the log is compacted into a new
// snapshot once it holds compactMin records and as many as twice the
// connections, and whenever the port settings change (the snapshot holds
// them) or the writer stops.

// logSuffix names the log after the state file.
const logSuffix = ".log"

// compactMin is the fewest log records that trigger a compaction.
const compactMin = 4096

// Log record operations.
const (
	opGeneration = "gen" // the header: the snapshot generation the log continues
	opPut        = "put" // a connection added or changed (all its fields)
	opDelete     = "del" // a connection removed (its key fields)
)

// logRecord is one line of the log.
type logRecord struct {
	Op         string          `json:"op"`
	Generation uint64          `json:"gen,omitempty"`
	Conn       *fileConnection `json:"conn,omitempty"`
}

func putRecord(c fabric.Connection) logRecord {
	fc := toFile(c)
	return logRecord{Op: opPut, Conn: &fc}
}

func deleteRecord(k fabric.ConnKey) logRecord {
	return logRecord{Op: opDelete, Conn: &fileConnection{SenderIP: k.SenderIP.String(), UDPSrcPort: k.UDPSrcPort,
		ReceiverQPN: k.ReceiverQPN}}
}

// stateLog is the writer's handle on the log (d.saveMu).
type stateLog struct {
	// owned: this instance wrote the log's current generation (the last
	// compaction was its own) and may append to it; otherwise the next
	// change compacts first.
	owned   bool
	gen     uint64   // the generation of the snapshot and the log
	f       *os.File // the log open for appending (nil: opened on demand)
	records int      // records in the log, header excluded
}

func logPath(stateFile string) string { return stateFile + logSuffix }

// closeLocked closes the log file (saveMu held); owned says whether this
// instance may go on appending to it.
func (l *stateLog) closeLocked(owned bool) error {
	l.owned = l.owned && owned
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// readState reads the snapshot and replays the log on it. A torn or
// unreadable last record (a crash in the middle of an append) is skipped
// and reported in warnings; a log of another generation (a crash between
// writing a snapshot and starting its log) holds nothing the snapshot does
// not, and is ignored.
func readState(path string) (*fileState, []string, error) {
	fs, err := loadStateFile(path)
	if err != nil {
		return nil, nil, err
	}
	lp := logPath(path)
	data, err := readLimited(lp, MaxStateFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return fs, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("state log: %w", err)
	}
	var warnings []string
	lines := bytes.Split(data, []byte{'\n'})
	if last := lines[len(lines)-1]; len(last) > 0 {
		warnings = append(warnings, fmt.Sprintf("state log %s: the last record is torn (%d bytes without an end of line, "+
			"a crash while it was written): ignored", lp, len(last)))
	}
	lines = lines[:len(lines)-1] // the part after the last end of line
	if len(lines) == 0 {
		return fs, warnings, nil
	}
	var head logRecord
	if err := json.Unmarshal(lines[0], &head); err != nil || head.Op != opGeneration {
		if len(lines) == 1 {
			return fs, append(warnings, fmt.Sprintf("state log %s: unreadable header: ignored", lp)), nil
		}
		return nil, nil, fmt.Errorf("state log %s: line 1: not a header (%v)", lp, err)
	}
	if head.Generation != fs.LogGeneration {
		return fs, warnings, nil // compacted into the snapshot already
	}
	key := func(fc *fileConnection) (fabric.ConnKey, error) {
		c, err := fromFile(fileConnection{SenderIP: fc.SenderIP, UDPSrcPort: fc.UDPSrcPort, ReceiverQPN: fc.ReceiverQPN})
		return c.ConnKey, err
	}
	conns := fs.Connections
	index := make(map[fabric.ConnKey]int, len(conns))
	for i := range conns {
		k, err := key(&conns[i])
		if err != nil {
			return nil, nil, fmt.Errorf("state file %s: connection %d: %w", path, i, err)
		}
		index[k] = i
	}
	deleted := make([]bool, len(conns))
	for n, line := range lines[1:] {
		var rec logRecord
		err := json.Unmarshal(line, &rec)
		var k fabric.ConnKey
		if err == nil && rec.Conn == nil {
			err = errors.New("no connection")
		}
		if err == nil {
			k, err = key(rec.Conn)
		}
		if err == nil && rec.Op != opPut && rec.Op != opDelete {
			err = fmt.Errorf("unknown operation %q", rec.Op)
		}
		if err != nil {
			if n == len(lines)-2 {
				warnings = append(warnings, fmt.Sprintf("state log %s: line %d: the last record is unreadable (%v): ignored", lp, n+2, err))
				break
			}
			return nil, nil, fmt.Errorf("state log %s: line %d: %w", lp, n+2, err)
		}
		i, known := index[k]
		switch {
		case rec.Op == opDelete && known:
			deleted[i] = true
			delete(index, k)
		case rec.Op == opPut && known:
			conns[i] = *rec.Conn
		case rec.Op == opPut:
			index[k] = len(conns)
			conns = append(conns, *rec.Conn)
			deleted = append(deleted, false)
		}
	}
	out := make([]fileConnection, 0, len(index))
	for i, fc := range conns {
		if !deleted[i] {
			out = append(out, fc)
		}
	}
	fs.Connections = out
	return fs, warnings, nil
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d MiB", path, limit>>20)
	}
	return data, nil
}

// compactLocked writes the whole state as a new snapshot generation and
// starts its log (d.mu and d.saveMu held): snapshot first (atomically),
// then the log's header (atomically). A crash in between leaves the new
// snapshot and the old log, which is ignored.
func (d *Daemon) compactLocked() error {
	gen := d.slog.gen + 1
	fs := &fileState{Version: stateVersion, Ports: d.overrides, LogGeneration: gen, WriterElection: map[string][2]uint64{},
		INC: d.incFileLocked()}
	for sw, id := range d.token {
		fs.WriterElection[sw] = [2]uint64{id.High, id.Low}
	}
	seen := make(map[fabric.ConnKey]time.Time, d.conns.Len())
	for _, c := range d.conns.List() {
		fs.Connections = append(fs.Connections, toFile(c))
		seen[c.ConnKey] = c.LastSeen
	}
	if err := d.slog.closeLocked(false); err != nil {
		d.log.WithError(err).Warn("closing the state log")
	}
	if err := saveStateFile(d.base.StateFile, fs); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.savedSeen = seen
	d.slog.gen = gen
	head, err := json.Marshal(logRecord{Op: opGeneration, Generation: gen})
	if err != nil {
		return fmt.Errorf("daemon: state log: %w", err)
	}
	err = writeFileAtomic(logPath(d.base.StateFile), append(head, '\n'))
	d.stamp = statStamp(d.base.StateFile)
	if err != nil {
		// The snapshot holds everything; the next change compacts again.
		return fmt.Errorf("daemon: state log: %w", err)
	}
	d.slog = stateLog{owned: true, gen: gen}
	return nil
}

// appendLocked writes records to the log with one fsync (d.mu held for
// writing): the group commit of the changes handled together. It
// compacts instead when the log is not this instance's or is long enough.
// Only the writer writes (see saveLocked).
func (d *Daemon) appendLocked(recs []logRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if !d.writer.Load() {
		return fmt.Errorf("daemon: state file not written: %w", ErrNotPrimary)
	}
	if d.ha != nil {
		if err := d.ha.writeLocked(recs); err != nil {
			return err
		}
		d.noteSavedLocked(recs)
		return nil
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if err := d.supplantedLocked(); err != nil {
		return err
	}
	l := &d.slog
	if !l.owned || l.records+len(recs) >= max(compactMin, 2*d.conns.Len()) {
		return d.compactLocked()
	}
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("daemon: state log: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	lp := logPath(d.base.StateFile)
	if l.f == nil {
		f, err := os.OpenFile(lp, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return d.compactLocked() // gone: start again from a snapshot
		}
		l.f = f
	}
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		// A partial record may be left: compacting replaces the log.
		if cerr := d.compactLocked(); cerr != nil {
			return fmt.Errorf("daemon: state log: write %s: %w (and compacting: %v)", lp, err, cerr)
		}
		return nil
	}
	if err := l.f.Sync(); err != nil {
		if cerr := d.compactLocked(); cerr != nil {
			return fmt.Errorf("daemon: state log: fsync %s: %w (and compacting: %v)", lp, err, cerr)
		}
		return nil
	}
	l.records += len(recs)
	d.noteSavedLocked(recs)
	d.stamp = statStamp(d.base.StateFile)
	return nil
}

// noteSavedLocked records the refresh times of written records (d.mu held):
// refreshes are written again once these are idle_timeout/4 old.
func (d *Daemon) noteSavedLocked(recs []logRecord) {
	for _, r := range recs {
		if r.Op != opPut {
			continue
		}
		if c, err := fromFile(*r.Conn); err == nil {
			d.savedSeen[c.ConnKey] = c.LastSeen
		}
	}
}

// errSupplanted: an instance that outranks this one wrote the state file.
var errSupplanted = errors.New("a fastcnpd instance with a higher election ID wrote the state file: it took over")

// supplantedLocked checks, before a write (saveMu held), that no other
// instance took the state file over. A file changed since this instance last
// read or wrote it was written by another one: the one that took over while
// this one hung or was cut off (and has not heard from the switches yet), or
// a stale one that wrote before it learnt of a takeover by this one. The
// election IDs the snapshot's writer held (writer_election) tell which:
// switch IDs only rise at a takeover. Outranked on a switch both hold, this
// instance gives the file up (writing now, above all compacting its stale view
// into a new snapshot, would drop what the other saved). Otherwise its view
// wins: its next write compacts it over what the stale one wrote (changes no
// switch took, so nobody was answered).
func (d *Daemon) supplantedLocked() error {
	if statStamp(d.base.StateFile) == d.stamp {
		return nil
	}
	lf := logrus.Fields{"state_file": d.base.StateFile}
	fs, err := loadStateFile(d.base.StateFile)
	if err == nil && !outranks(fs.WriterElection, d.token) {
		if err := d.slog.closeLocked(false); err != nil {
			d.log.WithError(err).Warn("closing the state log")
		}
		d.log.WithFields(lf).Warn("an instance that does not outrank this one wrote the state file since this one last did " +
			"(a primary that had not learnt of the takeover yet): this one's state replaces it")
		return nil
	}
	if err := d.slog.closeLocked(false); err != nil {
		d.log.WithError(err).Warn("closing the state log")
	}
	if d.writer.Swap(false) {
		if err != nil {
			lf["read_error"] = err.Error()
		}
		d.log.WithFields(lf).Warn("standby: " + errSupplanted.Error() + "; this one no longer writes it")
	}
	return fmt.Errorf("daemon: state file not written: %w: %w", ErrNotPrimary, errSupplanted)
}

// outranks reports whether the election IDs of a state file's writer
// outrank this instance's on some switch both hold (or whether they share
// none, when nothing says this instance is the rightful writer).
func outranks(file map[string][2]uint64, own map[string]p4rt.Uint128) bool {
	common := false
	for sw, id := range own {
		f, ok := file[sw]
		if !ok {
			continue
		}
		common = true
		if id.Less(p4rt.Uint128{High: f[0], Low: f[1]}) {
			return true
		}
	}
	return !common
}

// closeLog closes the log file; this instance may append to it again.
func (d *Daemon) closeLog() {
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if err := d.slog.closeLocked(true); err != nil {
		d.log.WithError(err).Warn("closing the state log")
	}
}

// disownLog closes the log file and has the next change compact first: the
// file may be another instance's from now on (a demotion, a reload).
func (d *Daemon) disownLog() {
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if err := d.slog.closeLocked(false); err != nil {
		d.log.WithError(err).Warn("closing the state log")
	}
}
