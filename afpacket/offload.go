//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offloads is the state of the offloads that change what an AF_PACKET
// socket sees on an interface.
type Offloads struct {
	// TSO, GSO: the stack hands the driver (and packet sockets on the peer
	// of a veth) super-frames of up to 64 KiB.
	TSO, GSO bool
	// GRO: the receive path merges frames into super-frames.
	GRO bool
	// TxChecksum: L4 checksums are left for the "hardware"; on veth that
	// means they are never filled in (CHECKSUM_PARTIAL on the peer).
	TxChecksum bool
	// RxChecksum: receive checksum validation offload.
	RxChecksum bool
	// ScatterGather: needed by TSO/GSO.
	ScatterGather bool
}

type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqPtr is struct ifreq with ifr_data.
type ifreqPtr struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

func ethtool(fd int, ifname string, cmd, data uint32) (uint32, error) {
	if len(ifname) >= unix.IFNAMSIZ {
		return 0, fmt.Errorf("interface name %q too long", ifname)
	}
	v := &ethtoolValue{cmd: cmd, data: data}
	ifr := &ifreqPtr{data: unsafe.Pointer(v)}
	copy(ifr.name[:], ifname)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
	runtime.KeepAlive(ifr)
	runtime.KeepAlive(v)
	if e != 0 {
		return 0, e
	}
	return v.data, nil
}

type offloadOp struct {
	name     string
	get, set uint32
	field    func(*Offloads) *bool
}

// Order matters when disabling: TSO needs SG and TX checksum, so it goes
// first; the kernel would otherwise refuse or re-derive features.
var offloadOps = []offloadOp{
	{"tso", unix.ETHTOOL_GTSO, unix.ETHTOOL_STSO, func(o *Offloads) *bool { return &o.TSO }},
	{"gso", unix.ETHTOOL_GGSO, unix.ETHTOOL_SGSO, func(o *Offloads) *bool { return &o.GSO }},
	{"gro", unix.ETHTOOL_GGRO, unix.ETHTOOL_SGRO, func(o *Offloads) *bool { return &o.GRO }},
	{"tx-checksum", unix.ETHTOOL_GTXCSUM, unix.ETHTOOL_STXCSUM, func(o *Offloads) *bool { return &o.TxChecksum }},
	{"rx-checksum", unix.ETHTOOL_GRXCSUM, unix.ETHTOOL_SRXCSUM, func(o *Offloads) *bool { return &o.RxChecksum }},
	{"scatter-gather", unix.ETHTOOL_GSG, unix.ETHTOOL_SSG, func(o *Offloads) *bool { return &o.ScatterGather }},
}

// ReadOffloads returns the offload state of ifname in the calling thread's
// network namespace, using the legacy ethtool ioctls (no ethtool binary).
func ReadOffloads(ifname string) (Offloads, error) {
	var o Offloads
	err := withSocket(func(fd int) error {
		for _, op := range offloadOps {
			v, err := ethtool(fd, ifname, op.get, 0)
			if err != nil {
				return fmt.Errorf("port %s: ethtool get %s: %w", ifname, op.name, err)
			}
			*op.field(&o) = v != 0
		}
		return nil
	})
	return o, err
}

// DisableOffloads turns off TSO, GSO, GRO, TX and RX checksum offload and
// scatter-gather on ifname in the calling thread's network namespace, so
// that packet sockets on it and on a veth peer see ordinary frames of at
// most MTU bytes with complete checksums. Offloads the driver cannot
// change (EOPNOTSUPP) are skipped.
func DisableOffloads(ifname string) error {
	return withSocket(func(fd int) error { return disableOffloads(fd, ifname) })
}

func disableOffloads(fd int, ifname string) error {
	for _, op := range offloadOps {
		if _, err := ethtool(fd, ifname, op.set, 0); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				continue
			}
			return fmt.Errorf("port %s: ethtool disable %s: %w", ifname, op.name, err)
		}
	}
	return nil
}

func withSocket(fn func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("port: socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	return fn(fd)
}
