// Package wireshark holds fastcnp.lua, a Wireshark (4.0, Lua 5.2) dissector
// for fastcnp's own headers: the CNP extension after the BTH of a RoCEv2 CNP
// (opcode 0x81, which it names "CNP"), the INC header of INC packets (BTH
// byte 4 = wire.INCBTHMark) and the RDMA-connection announcement (UDP, port
// wire.DefaultAnnouncePort by default). The layouts are those of
// docs/wire-formats.md and package wire.
//
// The package has no Go API: its test builds frames with package wire,
// writes them to a pcap with internal/pcapio and checks what tshark, with
// the script loaded, decodes. See README.md for how to load the script.
package wireshark
