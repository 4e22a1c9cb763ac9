package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/incroute"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// ReasonINCMembership rejects an announcement whose INC claim (group, rank)
// the config's inc.groups do not give its sender; such refusals are also
// counted in fastcnp_announcements_refused_total.
const ReasonINCMembership = "inc_membership"

// INC tree state (d.mu): the failures fastcnpd was told of and the tree it
// installs. The failures are kept in the state file (or etcd): a restarted
// fastcnpd, or the next HA leader, keeps avoiding them until told otherwise.

// computeINCTreeLocked recomputes the INC tree from the config and the
// failures, moving as few of the shared table's buckets as it can (d.mu
// held for writing). It returns the buckets moved.
func (d *Daemon) computeINCTreeLocked() (int, error) {
	var prev incroute.Table
	if d.incTree != nil {
		prev = d.incTree.Table
	}
	t, err := fabric.ComputeINCTree(d.cfg, d.incFail, prev)
	if err != nil {
		return 0, err
	}
	moved := 0
	switch {
	case len(prev) == len(t.Table):
		moved = incroute.Moved(prev, t.Table)
	case len(prev) > 0 || len(t.Table) > 0:
		moved = max(len(prev), len(t.Table))
	}
	for _, w := range t.Warnings {
		d.log.WithField("component", "inc-tree").Warn(w)
	}
	d.incTree = t
	d.metrics.incUppers.Set(float64(len(t.Uppers)))
	return moved, nil
}

// INCTree returns the INC tree now installed and the failures it avoids.
func (d *Daemon) INCTree() (*fabric.INCTree, fabric.Failures) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f := fabric.Failures{Switches: maps.Clone(d.incFail.Switches), Links: maps.Clone(d.incFail.Links)}
	return d.incTree, f
}

// SetLinkState marks the link at port of switch sw down or up for the INC
// tree (port 0: the whole switch), recomputes the tree and installs it on
// every switch. It returns the buckets of the shared INC route table that
// moved. An up clears both ends of the link.
func (d *Daemon) SetLinkState(ctx context.Context, sw string, port uint16, down bool) (int, error) {
	if !d.primaryAnywhere() {
		return 0, ErrNotPrimary
	}
	d.mu.Lock()
	s := d.cfg.Switch(sw)
	if s == nil {
		d.mu.Unlock()
		return 0, fmt.Errorf("%w: %s", ErrUnknownSwitch, sw)
	}
	what := "switch " + sw
	if port == 0 {
		d.incFail.Switches = setMark(d.incFail.Switches, sw, down)
	} else {
		p := s.Port(port)
		if p == nil {
			d.mu.Unlock()
			return 0, fmt.Errorf("%w: %s port %d", ErrUnknownPort, sw, port)
		}
		peer := peerOf(d.cfg, sw, port)
		if peer == nil {
			d.mu.Unlock()
			return 0, fmt.Errorf("%w: %s port %d leads to no switch (no peer in the config): not a link of the INC tree", ErrInvalid, sw, port)
		}
		end := config.PeerPort{Switch: sw, Port: port}
		d.incFail.Links = setMark(d.incFail.Links, end, down)
		if !down {
			d.incFail.Links = setMark(d.incFail.Links, *peer, false)
		}
		what = fmt.Sprintf("link %s port %d - %s port %d", sw, port, peer.Switch, peer.Port)
	}
	d.incSettled = true
	moved, err := d.computeINCTreeLocked()
	uppers := 0
	if d.incTree != nil {
		uppers = len(d.incTree.Uppers)
	}
	var saveErr error
	if err == nil {
		saveErr = d.saveINCLocked()
	}
	d.mu.Unlock()
	if err != nil {
		return 0, err
	}
	state := "up"
	if down {
		state = "down"
	}
	d.metrics.incRecomputes.Inc()
	d.metrics.incMoved.Add(float64(moved))
	d.log.WithFields(logrus.Fields{"what": what, "state": state, "buckets_moved": moved, "upper_switches": uppers}).
		Warn("INC tree recomputed")
	d.publish(Event{Kind: EventINCTree, Message: what + " " + state,
		Fields: map[string]string{"state": state, "buckets_moved": fmt.Sprint(moved), "upper_switches": fmt.Sprint(uppers)}})
	err = d.syncAll(ctx)
	if saveErr != nil {
		// The tree avoids the failure all the same; a restart would not.
		d.log.WithError(saveErr).Error("INC tree: the link state is not saved")
		err = errors.Join(fmt.Errorf("the INC tree avoids %s but the link state is not saved: %w", what, saveErr), err)
	}
	return moved, err
}

// saveINCLocked persists the INC tree's failures (d.mu held for writing):
// in etcd in HA mode, else in a new snapshot of the state file.
func (d *Daemon) saveINCLocked() error {
	if !d.writer.Load() {
		return fmt.Errorf("daemon: state not written: %w", ErrNotPrimary)
	}
	if d.ha != nil {
		return d.ha.saveINCLocked(d.incFileLocked())
	}
	return d.saveLocked()
}

// incFileLocked returns the INC tree's failures in the state's form, in a
// stable order (nil: none).
func (d *Daemon) incFileLocked() *fileINC {
	if len(d.incFail.Switches) == 0 && len(d.incFail.Links) == 0 {
		return nil
	}
	f := &fileINC{}
	for sw, down := range d.incFail.Switches {
		if down {
			f.DownSwitches = append(f.DownSwitches, sw)
		}
	}
	for end, down := range d.incFail.Links {
		if down {
			f.DownLinks = append(f.DownLinks, fileLinkEnd{Switch: end.Switch, Port: end.Port})
		}
	}
	sort.Strings(f.DownSwitches)
	sort.Slice(f.DownLinks, func(i, j int) bool {
		a, b := f.DownLinks[i], f.DownLinks[j]
		return a.Switch < b.Switch || a.Switch == b.Switch && a.Port < b.Port
	})
	return f
}

// restoreINCFailures makes the saved failures (from source) the INC tree's,
// replacing those in memory, and recomputes the tree if one is computed
// already. A switch, or a port leading to no switch, that the config does
// not have any more is dropped with a warning.
func (d *Daemon) restoreINCFailures(f *fileINC, source string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	log := d.log.WithFields(logrus.Fields{"component": "inc-tree", "source": source})
	var nf fabric.Failures
	if f != nil {
		for _, sw := range f.DownSwitches {
			if d.cfg.Switch(sw) == nil {
				log.Warnf("saved failure of switch %s dropped: no such switch in the config", sw)
				continue
			}
			nf.Switches = setMark(nf.Switches, sw, true)
		}
		for _, e := range f.DownLinks {
			if d.cfg.Switch(e.Switch) == nil || d.cfg.Switch(e.Switch).Port(e.Port) == nil || peerOf(d.cfg, e.Switch, e.Port) == nil {
				log.Warnf("saved failure of the link at %s port %d dropped: no such link between switches in the config", e.Switch, e.Port)
				continue
			}
			nf.Links = setMark(nf.Links, config.PeerPort{Switch: e.Switch, Port: e.Port}, true)
		}
	}
	if maps.Equal(nf.Switches, d.incFail.Switches) && maps.Equal(nf.Links, d.incFail.Links) {
		return
	}
	d.incFail = nf
	if len(nf.Switches)+len(nf.Links) > 0 {
		log.WithFields(logrus.Fields{"down_switches": len(nf.Switches), "down_links": len(nf.Links)}).
			Warn("INC tree: avoiding the failures saved")
	}
	if d.incTree == nil {
		return // computed after the state is loaded (New)
	}
	moved, err := d.computeINCTreeLocked()
	if err != nil {
		log.WithError(err).Error("INC tree: recomputing with the failures saved")
		return
	}
	d.metrics.incMoved.Add(float64(moved))
}

// adoptINCTable makes the INC tree's shared table continue from the one
// leaf sw holds (by port), once after a start, so that a restart of
// fastcnpd moves no bucket the switches hold (a fresh Build need not equal
// a table that failures and repairs shaped). The first leaf read decides;
// a table that does not translate into the tree's upper switches (another
// topology, a switch of another controller) is ignored. It reports whether
// the tree changed.
func (d *Daemon) adoptINCTable(sw string, held incroute.Table) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.incSettled || d.incTree == nil || d.incTree.Table == nil {
		return false
	}
	part := d.incTree.Switch(sw)
	if part == nil || len(part.Up) == 0 {
		return false
	}
	byPort := map[uint32]uint32{}
	for id, up := range part.Up {
		byPort[uint32(up.Port)] = id
	}
	t := make(incroute.Table, len(held))
	for b, port := range held {
		id, ok := byPort[port]
		if !ok {
			return false
		}
		t[b] = id
	}
	d.incSettled = true
	if slices.Equal(t, d.incTree.Table) {
		return false
	}
	d.incTree.Table = t // the previous table of the recomputation below
	moved, err := d.computeINCTreeLocked()
	if err != nil {
		d.log.WithError(err).Error("INC tree: adopting the table of " + sw)
		return false
	}
	// moved counts the buckets UpdateBounded changed in the held table (0
	// when it is proportional and scattered for the weights of now).
	d.log.WithFields(logrus.Fields{"switch": sw, "buckets_moved": moved}).Info("INC tree: continuing from the table the leaf holds")
	return true
}

func setMark[K comparable](m map[K]bool, k K, on bool) map[K]bool {
	if on {
		if m == nil {
			m = map[K]bool{}
		}
		m[k] = true
	} else {
		delete(m, k)
	}
	return m
}

// peerOf returns the other end of the link at port of switch sw: the port's
// peer, or the port of another switch that names it as its peer.
func peerOf(c *config.Config, sw string, port uint16) *config.PeerPort {
	if p := c.Switch(sw).Port(port); p != nil && p.Peer != nil {
		return p.Peer
	}
	for i := range c.Switches {
		for _, p := range c.Switches[i].Ports {
			if p.Peer != nil && p.Peer.Switch == sw && p.Peer.Port == port {
				return &config.PeerPort{Switch: c.Switches[i].Name, Port: p.Number}
			}
		}
	}
	return nil
}

func (s *apiServer) GetINCTree(context.Context, *fastcnpv1.GetINCTreeRequest) (*fastcnpv1.INCTree, error) {
	return incTreePB(s.d.INCTree()), nil
}

func (s *apiServer) SetLinkState(ctx context.Context, req *fastcnpv1.SetLinkStateRequest) (*fastcnpv1.INCTree, error) {
	if req.GetPort() > config.MaxPort {
		return nil, status.Errorf(codes.InvalidArgument, "port %d out of range", req.GetPort())
	}
	moved, err := s.d.SetLinkState(ctx, req.GetSwitch(), uint16(req.GetPort()), req.GetDown())
	if err != nil {
		return nil, grpcErr(err)
	}
	out := incTreePB(s.d.INCTree())
	out.BucketsMoved = uint32(moved)
	return out, nil
}

// incTreePB converts the INC tree and the failures to the API's form, in a
// stable order.
func incTreePB(t *fabric.INCTree, f fabric.Failures) *fastcnpv1.INCTree {
	out := &fastcnpv1.INCTree{}
	if t == nil {
		return out
	}
	out.Leaves = append(out.Leaves, t.Leaves...)
	out.Buckets = append(out.Buckets, t.Table...)
	out.Warnings = append(out.Warnings, t.Warnings...)
	counts := incroute.Counts(t.Table)
	for _, u := range t.Uppers {
		out.Uppers = append(out.Uppers, &fastcnpv1.INCUpper{Name: u.Name, Id: u.ID, Weight: u.Weight, Buckets: uint32(counts[u.ID])})
	}
	names := make([]string, 0, len(t.Switches))
	for n := range t.Switches {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := t.Switches[n]
		ps := &fastcnpv1.INCTreeSwitch{Name: n, ChildPorts: map[uint32]uint32{}, UpPorts: map[uint32]uint32{}}
		ids := make([]uint16, 0, len(p.Groups))
		for id := range p.Groups {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			g := p.Groups[id]
			ps.Groups = append(ps.Groups, &fastcnpv1.INCTreeGroup{Id: uint32(id), ContributorsMask: g.Mask, Root: g.Root})
		}
		for port, rank := range p.Children {
			ps.ChildPorts[uint32(port)] = uint32(rank)
		}
		for id, up := range p.Up {
			ps.UpPorts[id] = uint32(up.Port)
		}
		out.Switches = append(out.Switches, ps)
	}
	for sw := range f.Switches {
		out.Down = append(out.Down, &fastcnpv1.INCLinkEnd{Switch: sw})
	}
	for e := range f.Links {
		out.Down = append(out.Down, &fastcnpv1.INCLinkEnd{Switch: e.Switch, Port: uint32(e.Port)})
	}
	sort.Slice(out.Down, func(i, j int) bool {
		a, b := out.Down[i], out.Down[j]
		return a.Switch < b.Switch || a.Switch == b.Switch && a.Port < b.Port
	})
	return out
}
