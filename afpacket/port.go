//go:build linux

// Package afpacket gives the software switch and the host agents raw access to
// Linux network interfaces through AF_PACKET sockets.
//
// A Port is bound to one interface, receives every frame on it (any
// EtherType, promiscuous, including 802.1Qbb PFC frames to
// 01:80:C2:00:00:01), never sees the frames sent on it, and sends frames
// unchanged. Reception and transmission are batched with recvmmsg(2) and
// sendmmsg(2) into caller-owned buffers, so the data path allocates nothing
// (reception may instead copy out of a TPACKET_V2 ring, Options.RxRing).
// Backlog measures what waits in the receive queue.
// The socket is non-blocking and parked in the Go runtime poller, so Close
// and context cancellation wake a blocked reader or writer at once without
// helper goroutines. See docs/ports.md for the design and measured rates.
package afpacket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

const (
	// EthHeaderLen is the length of an Ethernet header without VLAN tags.
	EthHeaderLen = 14
	// VLANTagLen is the length of one 802.1Q tag.
	VLANTagLen = 4
	// DefaultBatch is the default number of frames per recvmmsg/sendmmsg.
	DefaultBatch = 64
	// DefaultSocketBuffer is the default SO_RCVBUF/SO_SNDBUF in bytes.
	DefaultSocketBuffer = 4 << 20

	ethPAll = 0x0003 // ETH_P_ALL
)

var (
	// ErrClosed is returned by operations on a closed Port.
	ErrClosed = errors.New("port closed")
	// ErrShortBuffer is returned by ReadBatch when a buffer is shorter than
	// MaxFrameLen.
	ErrShortBuffer = errors.New("receive buffer shorter than the maximum frame")
	// ErrFrameTooLarge is returned by WriteBatch for a frame longer than
	// MaxFrameLen.
	ErrFrameTooLarge = errors.New("frame longer than the maximum frame")
	// ErrFrameTooShort is returned by WriteBatch for a frame shorter than an
	// Ethernet header.
	ErrFrameTooShort = errors.New("frame shorter than an Ethernet header")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// MTU is the largest L3 payload accepted, as in `ip link` (the Ethernet
	// header and one 802.1Q tag come on top). Received frames longer than
	// MTU+18 bytes, such as GSO/GRO super-frames, are dropped and counted
	// as Oversize. 0 means the interface MTU at Open time.
	MTU int
	// Batch is the maximum number of frames per system call, 0 means
	// DefaultBatch.
	Batch int
	// RecvBuffer and SendBuffer are the socket buffer sizes in bytes
	// (SO_RCVBUFFORCE/SO_SNDBUFFORCE when permitted), 0 means
	// DefaultSocketBuffer.
	RecvBuffer, SendBuffer int
	// NoPromiscuous leaves the interface out of promiscuous mode.
	NoPromiscuous bool
	// DisableOffloads turns off TSO, GSO, GRO, scatter-gather and TX/RX
	// checksum offload on the interface (see DisableOffloads). Use it on
	// veth interfaces so the kernel hands over plain frames with complete
	// checksums.
	DisableOffloads bool
	// RxRing, when > 0, receives through a TPACKET_V2 ring (PACKET_RX_RING, mmap) of
	// about RxRing bytes instead of recvmmsg: the kernel copies each frame into a
	// slot of the ring (power-of-two slots holding MaxFrameLen plus the slot header,
	// 2 KiB for a 1500-byte MTU) as it arrives, and ReadBatch copies it out without a
	// system call while frames are waiting: 10 to 25 times cheaper per frame for the
	// reader than recvmmsg (docs/ports.md). The ring is allocated and pinned at Open
	// (RxRing bytes of kernel memory per port, used or not) and holds RxRing / slot
	// frames whatever their size; RecvBuffer does not apply to it. Frames still wake
	// the reader one by one (no block timer, unlike TPACKET_V3).
	RxRing int
	// QdiscBypass sends frames straight to the driver (PACKET_QDISC_BYPASS),
	// skipping any tc shaper configured on the interface. Faster, but a
	// tbf/htb rate limit on the interface no longer applies to this port.
	QdiscBypass bool
	// Log receives structured diagnostics; nil means logrus.StandardLogger.
	Log logrus.FieldLogger
}

// Message is one frame buffer of a batch. Buf is caller-owned storage of at
// least MaxFrameLen bytes; ReadBatch sets N to the frame length.
type Message struct {
	// Buf holds the frame; only Buf[:N] is meaningful after ReadBatch.
	Buf []byte
	// N is the length of the frame in Buf.
	N int
}

// Stats are cumulative port counters.
type Stats struct {
	// RxPackets and RxBytes count frames handed to the caller.
	RxPackets, RxBytes uint64
	// TxPackets and TxBytes count frames accepted by the kernel.
	TxPackets, TxBytes uint64
	// TxErrors counts failed send system calls.
	TxErrors uint64
	// Oversize counts received frames longer than MaxFrameLen, dropped.
	Oversize uint64
	// Outgoing counts frames the kernel looped back as sent on the
	// interface (only when PACKET_IGNORE_OUTGOING is unavailable), dropped.
	Outgoing uint64
	// ChecksumPartial counts delivered frames whose L4 checksum the kernel
	// had not yet computed (TP_STATUS_CSUMNOTREADY): a sender with TX
	// checksum offload on; their checksum field is not valid on the wire.
	ChecksumPartial uint64
	// KernelPackets and KernelDrops are the kernel's PACKET_STATISTICS:
	// frames that reached the socket and frames dropped because its
	// receive buffer was full.
	KernelPackets, KernelDrops uint64
	// Queued is the number of frames waiting in the socket's receive queue
	// at the time of the call: KernelPackets - KernelDrops minus the frames
	// read so far (those the port then dropped as Oversize or Outgoing
	// included).
	Queued uint64
	// RecvBuffer is the socket's receive buffer in bytes as the kernel
	// accounts it (SO_RCVBUF: twice the size asked for; see Backlog).
	RecvBuffer int
}

// Backlog is the state of a port's receive queue, from one
// getsockopt(SO_MEMINFO). The kernel charges every queued frame its
// buffer's true size (on veth about 830 B for a 64-byte frame and 2.3 KB
// for a 1500-byte one, measured) against the receive buffer, and drops the
// frames that arrive while Bytes >= Capacity.
type Backlog struct {
	// Bytes is what the queued frames hold (sk_rmem_alloc).
	Bytes int64
	// Capacity is the receive buffer (sk_rcvbuf, twice Options.RecvBuffer).
	Capacity int64
	// Drops counts the frames the kernel dropped on this socket since Open
	// because the queue was full (sk_drops; the same frames as
	// Stats.KernelDrops, counted without resetting).
	Drops uint64
}

// Fill is Bytes as a fraction of Capacity (0 when Capacity is 0).
func (b Backlog) Fill() float64 {
	if b.Capacity <= 0 {
		return 0
	}
	return float64(b.Bytes) / float64(b.Capacity)
}

// Port is an AF_PACKET socket bound to one interface. ReadBatch and
// WriteBatch may run concurrently with each other; concurrent calls of the
// same one are serialised. Close may be called from any goroutine.
type Port struct {
	name     string
	index    int
	mtu      int
	maxFrame int
	batch    int
	log      logrus.FieldLogger

	file *os.File
	rc   syscall.RawConn

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	rxMu    sync.Mutex
	rxHdrs  []unix.Mmsghdr
	rxIov   []unix.Iovec
	rxNames []unix.RawSockaddrLinklayer
	rxCtrl  []byte
	rxWant  int
	rxGot   int
	rxErrno syscall.Errno
	rxFn    func(fd uintptr) bool
	rxIntr  func()

	// TPACKET_V2 receive ring (Options.RxRing), nil without
	ring      []byte       // nil after Close (set under rxMu and blMu)
	ringSize  int          // len(ring) at Open, 0 without a ring
	ringSlot  int          // bytes per slot
	ringSlots int          // slots
	ringCur   atomic.Int64 // next slot to read; written by ReadBatch (rxMu)

	// backlog: SO_MEMINFO (Backlog), a method value made once
	blMu   sync.Mutex
	blInfo [skMeminfoVars]uint32
	blErr  syscall.Errno
	blFn   func(fd uintptr)

	txMu    sync.Mutex
	txHdrs  []unix.Mmsghdr
	txIov   []unix.Iovec
	txWant  int
	txGot   int
	txErrno syscall.Errno
	txFn    func(fd uintptr) bool
	txIntr  func()

	rxPackets, rxBytes     atomic.Uint64
	rxDequeued             atomic.Uint64 // frames recvmmsg returned, dropped ones included
	txPackets, txBytes     atomic.Uint64
	txErrors               atomic.Uint64
	oversize, outgoing     atomic.Uint64
	csumPartial            atomic.Uint64
	statsMu                sync.Mutex
	kernPackets, kernDrops uint64
	rcvbuf                 int // SO_RCVBUF, or the ring's size
	ksBuf                  unix.TpacketStats
	ksErr                  syscall.Errno
	ksFn                   func(fd uintptr)
}

// SO_MEMINFO reports the socket's sk_meminfo: SK_MEMINFO_VARS u32 values, of which
// these (linux/sock_diag.h).
const (
	skMeminfoRmemAlloc = 0 // SK_MEMINFO_RMEM_ALLOC
	skMeminfoRcvbuf    = 1 // SK_MEMINFO_RCVBUF
	skMeminfoDrops     = 8 // SK_MEMINFO_DROPS
	skMeminfoVars      = 9 // SK_MEMINFO_VARS
)

// sizeofAuxdata is sizeof(struct tpacket_auxdata).
const sizeofAuxdata = int(unsafe.Sizeof(unix.TpacketAuxdata{}))

var ctrlLen = unix.CmsgSpace(sizeofAuxdata)

// Open opens a raw socket on the interface ifname of the calling thread's
// network namespace. To open a port inside another namespace, call Open
// from within netns.NS.Do; the port keeps working from any goroutine.
func Open(ifname string, opts Options) (*Port, error) {
	log := opts.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	log = log.WithField("port", ifname)
	// Protocol 0: the socket receives nothing until bind, so no frame of
	// another interface can slip in between socket() and bind().
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("port %s: socket(AF_PACKET): %w", ifname, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", ifname, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return nil, fmt.Errorf("port %s: interface index (SIOCGIFINDEX): %w", ifname, err)
	}
	index := int(ifr.Uint32())
	ifr, _ = unix.NewIfreq(ifname)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return nil, fmt.Errorf("port %s: interface MTU (SIOCGIFMTU): %w", ifname, err)
	}
	mtu := opts.MTU
	if mtu <= 0 {
		mtu = int(ifr.Uint32())
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	if batch > 1024 { // UIO_MAXIOV
		batch = 1024
	}
	rcvbuf, sndbuf := opts.RecvBuffer, opts.SendBuffer
	if rcvbuf <= 0 {
		rcvbuf = DefaultSocketBuffer
	}
	if sndbuf <= 0 {
		sndbuf = DefaultSocketBuffer
	}
	if err := setBuf(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, rcvbuf); err != nil {
		return nil, fmt.Errorf("port %s: receive buffer %d: %w", ifname, rcvbuf, err)
	}
	if err := setBuf(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, sndbuf); err != nil {
		return nil, fmt.Errorf("port %s: send buffer %d: %w", ifname, sndbuf, err)
	}
	// PACKET_AUXDATA tells us about VLAN tags the kernel stripped and
	// checksums it did not compute.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return nil, fmt.Errorf("port %s: PACKET_AUXDATA: %w", ifname, err)
	}
	ignoreOut := true
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		// Kernels before 4.20: filter on sll_pkttype instead.
		ignoreOut = false
		log.WithError(err).Debug("PACKET_IGNORE_OUTGOING unavailable, filtering outgoing frames in user space")
	}
	if opts.QdiscBypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return nil, fmt.Errorf("port %s: PACKET_QDISC_BYPASS: %w", ifname, err)
		}
	}
	if opts.DisableOffloads {
		if err := disableOffloads(fd, ifname); err != nil {
			return nil, err
		}
	}
	maxFrame := mtu + EthHeaderLen + VLANTagLen
	var ring []byte
	var slot, slots int
	if opts.RxRing > 0 {
		if ring, slot, slots, err = setupRing(fd, maxFrame, opts.RxRing); err != nil {
			return nil, fmt.Errorf("port %s: receive ring of %d B: %w", ifname, opts.RxRing, err)
		}
		defer func() {
			if !ok {
				_ = unix.Munmap(ring)
			}
		}()
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: index}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("port %s: bind(ifindex %d): %w", ifname, index, err)
	}
	if !opts.NoPromiscuous {
		mreq := &unix.PacketMreq{Ifindex: int32(index), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, mreq); err != nil {
			return nil, fmt.Errorf("port %s: promiscuous mode (PACKET_ADD_MEMBERSHIP): %w", ifname, err)
		}
	}
	// The fd is non-blocking, so os.NewFile registers it with the runtime
	// poller: blocked reads park the goroutine, and Close wakes them.
	file := os.NewFile(uintptr(fd), "packet:"+ifname)
	if file == nil {
		return nil, fmt.Errorf("port %s: os.NewFile failed", ifname)
	}
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		ok = true // fd now owned (and closed) by file
		if ring != nil {
			_ = unix.Munmap(ring)
		}
		return nil, fmt.Errorf("port %s: raw conn: %w", ifname, err)
	}
	ok = true
	p := &Port{
		name:      ifname,
		index:     index,
		mtu:       mtu,
		maxFrame:  maxFrame,
		batch:     batch,
		ring:      ring,
		ringSize:  len(ring),
		ringSlot:  slot,
		ringSlots: slots,
		log:       log,
		file:      file,
		rc:        rc,
		rxHdrs:    make([]unix.Mmsghdr, batch),
		rxIov:     make([]unix.Iovec, batch),
		rxNames:   make([]unix.RawSockaddrLinklayer, batch),
		rxCtrl:    make([]byte, batch*ctrlLen),
		txHdrs:    make([]unix.Mmsghdr, batch),
		txIov:     make([]unix.Iovec, batch),
	}
	for i := range p.rxHdrs {
		h := &p.rxHdrs[i].Hdr
		h.Iov = &p.rxIov[i]
		h.Iovlen = 1
		h.Name = (*byte)(unsafe.Pointer(&p.rxNames[i]))
		h.Control = &p.rxCtrl[i*ctrlLen]
	}
	for i := range p.txHdrs {
		p.txHdrs[i].Hdr.Iov = &p.txIov[i]
		p.txHdrs[i].Hdr.Iovlen = 1
	}
	// Method values made once, so the data path does not allocate them.
	p.rxFn = p.recvmmsg
	p.txFn = p.sendmmsg
	p.blFn = p.meminfo
	p.ksFn = p.kernelStats
	if ring != nil {
		p.rxFn = p.ringReady
	}
	p.rxIntr = func() { _ = p.file.SetReadDeadline(time.Unix(1, 0)) }
	p.txIntr = func() { _ = p.file.SetWriteDeadline(time.Unix(1, 0)) }
	gotRcv, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	p.rcvbuf = gotRcv
	if ring != nil {
		p.rcvbuf = len(ring)
	}
	if ring == nil && gotRcv < 2*rcvbuf {
		// SO_RCVBUFFORCE needs CAP_NET_ADMIN; SO_RCVBUF is capped at
		// net.core.rmem_max. A smaller buffer absorbs shorter bursts.
		log.WithFields(logrus.Fields{"asked": rcvbuf, "got": gotRcv / 2}).
			Warn("receive buffer smaller than asked (no CAP_NET_ADMIN? raise net.core.rmem_max)")
	}
	log.WithFields(logrus.Fields{
		"ifindex": index, "mtu": mtu, "max_frame": p.maxFrame, "batch": batch,
		"ignore_outgoing": ignoreOut, "promiscuous": !opts.NoPromiscuous, "rcvbuf": gotRcv,
		"rx_ring": len(ring), "rx_ring_slots": slots,
	}).Debug("port opened")
	return p, nil
}

func setBuf(fd, force, plain, size int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size); err == nil {
		return nil
	}
	// Without CAP_NET_ADMIN the size is capped by net.core.[rw]mem_max.
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Name returns the interface name.
func (p *Port) Name() string { return p.name }

// Index returns the interface index (in the port's namespace).
func (p *Port) Index() int { return p.index }

// MTU returns the L3 MTU the port enforces on received frames.
func (p *Port) MTU() int { return p.mtu }

// MaxFrameLen returns the longest frame the port delivers or sends:
// MTU + 14 (Ethernet header) + 4 (one 802.1Q tag). Receive buffers must
// be at least this long.
func (p *Port) MaxFrameLen() int { return p.maxFrame }

// BatchSize returns the maximum number of frames per system call.
func (p *Port) BatchSize() int { return p.batch }

// NewBatch allocates n Messages with buffers of MaxFrameLen bytes.
func (p *Port) NewBatch(n int) []Message {
	store := make([]byte, n*p.maxFrame)
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i].Buf = store[i*p.maxFrame : (i+1)*p.maxFrame : (i+1)*p.maxFrame]
	}
	return msgs
}

// ReadBatch blocks until at least one frame is available and then fills
// up to min(len(msgs), BatchSize()) messages with one system call. It
// returns the number n of frames: msgs[:n] hold them, in arrival order,
// with N set. Frames dropped by the port (oversize, outgoing) are not
// returned; to keep the result contiguous without copying, ReadBatch may
// swap Buf slices between elements of msgs (all of them stay the caller's).
//
// 802.1Q tags that the kernel stripped into metadata are put back, so the
// frame is byte-identical to the one on the wire. ReadBatch returns
// ctx.Err() when ctx ends and ErrClosed after Close. It does not allocate,
// except a small context.AfterFunc record per call when ctx can be
// cancelled.
func (p *Port) ReadBatch(ctx context.Context, msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	if p.closed.Load() {
		return 0, ErrClosed
	}
	want := min(len(msgs), p.batch)
	if p.ring != nil {
		return p.readRing(ctx, msgs[:want])
	}
	for i := 0; i < want; i++ {
		if len(msgs[i].Buf) < p.maxFrame {
			return 0, fmt.Errorf("port %s: message %d has %d bytes, need %d: %w",
				p.name, i, len(msgs[i].Buf), p.maxFrame, ErrShortBuffer)
		}
		p.rxIov[i].Base = &msgs[i].Buf[0]
		p.rxIov[i].SetLen(p.maxFrame)
	}
	p.rxWant = want
	defer func() {
		for i := 0; i < want; i++ { // do not pin the caller's buffers
			p.rxIov[i].Base = nil
		}
	}()
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, p.rxIntr)
		defer stop()
	}
	for {
		for i := 0; i < want; i++ {
			h := &p.rxHdrs[i]
			h.Hdr.Namelen = unix.SizeofSockaddrLinklayer
			h.Hdr.SetControllen(ctrlLen)
			h.Hdr.Flags = 0
			h.Len = 0
		}
		if err := p.wait(ctx, false); err != nil {
			return 0, err
		}
		if p.rxErrno != 0 {
			return 0, fmt.Errorf("port %s: recvmmsg: %w", p.name, p.rxErrno)
		}
		if n := p.deliver(msgs, p.rxGot); n > 0 {
			return n, nil
		}
		// Everything in this batch was dropped: wait for more.
	}
}

// ReadFrame reads one frame into buf (at least MaxFrameLen bytes) and
// returns its length. It is ReadBatch with a batch of one.
func (p *Port) ReadFrame(ctx context.Context, buf []byte) (int, error) {
	msgs := [1]Message{{Buf: buf}}
	n, err := p.ReadBatch(ctx, msgs[:])
	if n == 0 {
		return 0, err
	}
	return msgs[0].N, err
}

// deliver post-processes the got messages of the last recvmmsg, compacts
// the frames to keep into msgs[:n] and returns n.
func (p *Port) deliver(msgs []Message, got int) int {
	n := 0
	var bytes uint64
	for i := 0; i < got; i++ {
		h := &p.rxHdrs[i]
		msgs[i].N = 0
		if p.rxNames[i].Pkttype == unix.PACKET_OUTGOING {
			p.outgoing.Add(1)
			continue
		}
		length := int(h.Len) // full length thanks to MSG_TRUNC
		var tci, tpid uint16
		vlan := false
		if int(h.Hdr.Controllen) >= unix.CmsgLen(sizeofAuxdata) {
			c := p.rxCtrl[i*ctrlLen : (i+1)*ctrlLen]
			level := int32(binary.NativeEndian.Uint32(c[8:]))
			typ := int32(binary.NativeEndian.Uint32(c[12:]))
			if level == unix.SOL_PACKET && typ == unix.PACKET_AUXDATA {
				a := c[unix.CmsgLen(0):]
				status := binary.NativeEndian.Uint32(a[0:])
				tci = binary.NativeEndian.Uint16(a[16:])
				tpid = binary.NativeEndian.Uint16(a[18:])
				if status&unix.TP_STATUS_VLAN_VALID != 0 || tci != 0 {
					vlan = true
					if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 || tpid == 0 {
						tpid = 0x8100
					}
				}
				if status&unix.TP_STATUS_CSUMNOTREADY != 0 {
					p.csumPartial.Add(1)
				}
			}
		}
		frameLen := length
		if vlan {
			frameLen += VLANTagLen
		}
		if frameLen > p.maxFrame || h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			p.oversize.Add(1)
			continue
		}
		if vlan {
			if length < 12 {
				p.oversize.Add(1) // cannot happen on Ethernet; be safe
				continue
			}
			b := msgs[i].Buf
			copy(b[12+VLANTagLen:frameLen], b[12:length])
			binary.BigEndian.PutUint16(b[12:], tpid)
			binary.BigEndian.PutUint16(b[14:], tci)
		}
		if n != i {
			msgs[n], msgs[i] = msgs[i], msgs[n]
		}
		msgs[n].N = frameLen
		bytes += uint64(frameLen)
		n++
	}
	if n > 0 {
		p.rxPackets.Add(uint64(n))
		p.rxBytes.Add(bytes)
	}
	return n
}

// Backlog reports the receive queue (one getsockopt(SO_MEMINFO), no
// allocation). It may be called from any goroutine, also while ReadBatch
// runs. After Close it returns ErrClosed.
func (p *Port) Backlog() (Backlog, error) {
	p.blMu.Lock()
	defer p.blMu.Unlock()
	if p.closed.Load() {
		return Backlog{}, ErrClosed
	}
	if p.ring != nil {
		return p.ringBacklog(), nil
	}
	if err := p.rc.Control(p.blFn); err != nil {
		return Backlog{}, ErrClosed
	}
	if p.blErr != 0 {
		return Backlog{}, fmt.Errorf("port %s: getsockopt(SO_MEMINFO): %w", p.name, p.blErr)
	}
	return Backlog{
		Bytes:    int64(p.blInfo[skMeminfoRmemAlloc]),
		Capacity: int64(p.blInfo[skMeminfoRcvbuf]),
		Drops:    uint64(p.blInfo[skMeminfoDrops]),
	}, nil
}

func (p *Port) meminfo(fd uintptr) {
	l := uint32(unsafe.Sizeof(p.blInfo))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&p.blInfo[0])), uintptr(unsafe.Pointer(&l)), 0)
	p.blErr = e
}

// WriteBatch sends frames in order, BatchSize() per system call, and
// returns how many the kernel accepted. It blocks while the socket send
// buffer is full; it stops at the first frame that is too short, too long
// or refused by the kernel, returning its index as the count and an error.
// Frames are sent as given: no padding, no FCS.
func (p *Port) WriteBatch(ctx context.Context, frames [][]byte) (int, error) {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	if p.closed.Load() {
		return 0, ErrClosed
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, p.txIntr)
		defer stop()
	}
	defer func() {
		for i := 0; i < min(len(frames), p.batch); i++ { // do not pin the caller's frames
			p.txIov[i].Base = nil
		}
	}()
	sent := 0
	for sent < len(frames) {
		want := min(len(frames)-sent, p.batch)
		var bad error
		for i := 0; i < want; i++ {
			f := frames[sent+i]
			switch {
			case len(f) < EthHeaderLen:
				bad = fmt.Errorf("port %s: frame %d: %d bytes: %w", p.name, sent+i, len(f), ErrFrameTooShort)
			case len(f) > p.maxFrame:
				bad = fmt.Errorf("port %s: frame %d: %d bytes, max %d: %w", p.name, sent+i, len(f), p.maxFrame, ErrFrameTooLarge)
			}
			if bad != nil {
				want = i
				break
			}
			p.txIov[i].Base = &f[0]
			p.txIov[i].SetLen(len(f))
		}
		if want == 0 {
			return sent, bad
		}
		p.txWant = want
		if err := p.wait(ctx, true); err != nil {
			return sent, err
		}
		if p.txErrno != 0 {
			p.txErrors.Add(1)
			return sent, fmt.Errorf("port %s: sendmmsg frame %d (%d bytes): %w", p.name, sent, len(frames[sent]), p.txErrno)
		}
		var bytes uint64
		for i := 0; i < p.txGot; i++ {
			bytes += uint64(len(frames[sent+i]))
		}
		p.txPackets.Add(uint64(p.txGot))
		p.txBytes.Add(bytes)
		sent += p.txGot
	}
	return sent, nil
}

// WriteFrame sends one frame.
func (p *Port) WriteFrame(ctx context.Context, frame []byte) error {
	frames := [1][]byte{frame}
	_, err := p.WriteBatch(ctx, frames[:])
	return err
}

// wait runs the prepared recvmmsg (write=false) or sendmmsg (write=true)
// until it does not return EAGAIN, parking in the runtime poller between
// attempts. A deadline in the past is how ctx cancellation interrupts it;
// a stale interruption from an earlier call is cleared and retried.
func (p *Port) wait(ctx context.Context, write bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if write {
			err = p.rc.Write(p.txFn)
		} else {
			err = p.rc.Read(p.rxFn)
		}
		if err == nil {
			return nil
		}
		if p.closed.Load() {
			return ErrClosed
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			// Stale interruption; the ctx check at the top of the loop
			// closes the race with a cancellation happening right now.
			if write {
				err = p.file.SetWriteDeadline(time.Time{})
			} else {
				err = p.file.SetReadDeadline(time.Time{})
			}
			if err != nil {
				return fmt.Errorf("port %s: reset deadline: %w", p.name, err)
			}
			continue
		}
		return fmt.Errorf("port %s: %w", p.name, err)
	}
}

func (p *Port) recvmmsg(fd uintptr) bool {
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&p.rxHdrs[0])),
			uintptr(p.rxWant), unix.MSG_TRUNC, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		p.rxGot, p.rxErrno = int(r), e
		if e == 0 {
			p.rxDequeued.Add(uint64(r))
		}
		return true
	}
}

func (p *Port) sendmmsg(fd uintptr) bool {
	for {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&p.txHdrs[0])),
			uintptr(p.txWant), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		p.txGot, p.txErrno = int(r), e
		return true
	}
}

// Stats returns the counters. It reads (and accumulates) the kernel's
// PACKET_STATISTICS, so it makes one system call while the port is open.
func (p *Port) Stats() Stats {
	p.pollKernelStats()
	p.statsMu.Lock()
	kp, kd, rcv := p.kernPackets, p.kernDrops, p.rcvbuf
	p.statsMu.Unlock()
	var queued uint64
	if deq := p.rxDequeued.Load(); kp-kd > deq && kp >= kd {
		queued = kp - kd - deq
	}
	return Stats{
		RxPackets:       p.rxPackets.Load(),
		RxBytes:         p.rxBytes.Load(),
		TxPackets:       p.txPackets.Load(),
		TxBytes:         p.txBytes.Load(),
		TxErrors:        p.txErrors.Load(),
		Oversize:        p.oversize.Load(),
		Outgoing:        p.outgoing.Load(),
		ChecksumPartial: p.csumPartial.Load(),
		KernelPackets:   kp,
		KernelDrops:     kd,
		Queued:          queued,
		RecvBuffer:      rcv,
	}
}

// pollKernelStats adds the kernel counters, which reset on every read.
func (p *Port) pollKernelStats() {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if err := p.rc.Control(p.ksFn); err != nil || p.ksErr != 0 {
		return // closed: the last values were collected by Close
	}
	p.kernPackets += uint64(p.ksBuf.Packets)
	p.kernDrops += uint64(p.ksBuf.Drops)
}

// kernelStats reads PACKET_STATISTICS (and, without a ring, SO_RCVBUF) into the port
// (a method value made once: no allocation). Called with statsMu held.
func (p *Port) kernelStats(fd uintptr) {
	l := uint32(unsafe.Sizeof(p.ksBuf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&p.ksBuf)), uintptr(unsafe.Pointer(&l)), 0)
	p.ksErr = e
	if e == 0 && p.ringSize == 0 {
		if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
			p.rcvbuf = v
		}
	}
}

// Close closes the socket. A ReadBatch or WriteBatch blocked in another
// goroutine returns ErrClosed; Close waits for it to leave the socket.
// Close is idempotent; the interface's promiscuous mode is released.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.pollKernelStats()
		p.closed.Store(true)
		if err := p.file.Close(); err != nil {
			p.closeErr = fmt.Errorf("port %s: close: %w", p.name, err)
		}
		if p.ring != nil {
			// No reader (rxMu) and no Backlog (blMu) may touch the ring any more.
			p.rxMu.Lock()
			p.blMu.Lock()
			_ = unix.Munmap(p.ring)
			p.ring = nil
			p.blMu.Unlock()
			p.rxMu.Unlock()
		}
		p.log.Debug("port closed")
	})
	return p.closeErr
}
