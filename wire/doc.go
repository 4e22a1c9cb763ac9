// Package wire encodes and decodes every packet format fastcnp sends or
// parses: Ethernet, 802.1Q, MAC control (802.1Qbb PFC and 802.3x PAUSE),
// IPv4, UDP, the InfiniBand BTH and AETH of RoCEv2 with its ICRC, the
// fastcnp CNP extension, the INC header, the RDMA-connection announcement and
// the P4Runtime packet_in / packet_out headers.
//
// The layouts are fixed by docs/wire-formats.md (the contract shared with the
// P4 program); Parse implements the parse graph of docs/dataplane.md
// "Parser" and is what the Go reference pipeline uses, so it accepts and
// rejects exactly what the P4 parser does.
//
// The package does no I/O and no allocation on its hot paths: header
// Decode/Encode methods, Parse, the builders and the checksum helpers work on
// caller-owned buffers. Every failure is an *Error whose Unwrap is one of
// ErrTruncated, ErrMalformed, ErrShortBuffer or ErrRange, so callers can use
// errors.Is. Errors are preallocated package values: returning one never
// allocates, and they carry no per-packet data (no offsets).
package wire
