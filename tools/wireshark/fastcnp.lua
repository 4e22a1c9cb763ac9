-- fastcnp.lua: Wireshark (4.0, Lua 5.2) dissector for fastcnp's own headers.
--
-- Decodes, exactly as docs/wire-formats.md and the Go package wire/ lay them out:
--   * the fastcnp CNP extension: the 16 bytes after the BTH of a RoCEv2 CNP
--     (BTH opcode 0x81, which Wireshark 4.0 calls "Unknown"), and the CNP's ICRC;
--   * the INC header: after the BTH of a RoCEv2 packet whose BTH byte 4 is 0x01
--     (the INC mark) and whose opcode is not 0x81: 4-byte base header, the
--     16-byte IDS part when flag IDS is set, then 16 big-endian int32s;
--   * the INT header (HPCC in-band telemetry): after the BTH of a RoCEv2
--     packet whose BTH byte 4 is 0x02 (the INT mark) and whose opcode is not
--     0x81: 4-byte header, then hop_count 24-byte records, newest first; in
--     an ACK (opcode 0x11, echo flag) the AETH follows the records;
--   * the RDMA-connection announcement: a 32-byte UDP payload to the
--     announcement port (default 4792, preference fastcnp.announce_port),
--     and its 40-byte authentication trailer when one follows (key ID,
--     timestamp, nonce, HMAC-SHA256-128 tag; the tag is shown, not checked:
--     the key is fastcnpd's).
--
--   * the ECN echo of an RC ACK (opcode 0x11): the top reserved bit of BTH
--     byte 8 (0x40), set by fastcnp receivers for DCTCP senders.
--
-- RoCEv2 (UDP 4791) stays Wireshark's own InfiniBand dissector: this script
-- takes the udp.port 4791 entry, calls the dissector that was registered
-- there (the InfiniBand "RRoCE" one) first, then adds a "fastcnp" tree for
-- the bytes after the BTH. Plain RoCE packets (no CNP, no INC or INT mark)
-- get nothing from it. (Wireshark's own tree of an ACK that echoes INT
-- records reads the INT header as its AETH; the fastcnp tree has the real one.) Every field is filterable under "fastcnp.".
--
-- Load: tshark -X lua_script:tools/wireshark/fastcnp.lua, or copy this file
-- to ~/.local/lib/wireshark/plugins/ (see README.md next to it).

local ROCE_PORT = 4791
local DEFAULT_ANNOUNCE_PORT = 4792

local BTH_LEN = 12
local ICRC_LEN = 4
local CNP_EXT_LEN = 16
local INC_LEN = 4
local INC_IDS_LEN = 16
local INC_VECTOR_LEN = 16 -- elements (P4 INC_VECTOR_LEN)
local INC_VECTOR_BYTES = INC_VECTOR_LEN * 4
local ANN_LEN = 32
local ANN_AUTH_LEN = 40

local OP_CNP = 0x81
local OP_ACK = 0x11
local AETH_LEN = 4
local INC_BTH_MARK = 0x01
local INT_BTH_MARK = 0x02
local INT_HDR_LEN = 4
local INT_HOP_LEN = 24
local INT_MAX_HOPS = 5 -- P4 INT_MAX_HOPS
local INT_VERSION = 1
local ANN_MAGIC = 0x46434E50 -- "FCNP"
local ANN_VERSION = 1
local CNP_EXT_VERSION = 1
local INC_VERSION = 1

local fastcnp = Proto("fastcnp", "fastcnp (CNP extension, INC header, INT header, RDMA-connection announcement)")

-- Value strings.
local opcode_vals = {
    [0x00] = "RC SEND First", [0x01] = "RC SEND Middle", [0x02] = "RC SEND Last",
    [0x03] = "RC SEND Last with Immediate", [0x04] = "RC SEND Only",
    [0x05] = "RC SEND Only with Immediate", [0x06] = "RC RDMA WRITE First",
    [0x07] = "RC RDMA WRITE Middle", [0x08] = "RC RDMA WRITE Last",
    [0x09] = "RC RDMA WRITE Last with Immediate", [0x0A] = "RC RDMA WRITE Only",
    [0x0B] = "RC RDMA WRITE Only with Immediate", [0x0C] = "RC RDMA READ Request",
    [0x0D] = "RC RDMA READ Response First", [0x0E] = "RC RDMA READ Response Middle",
    [0x0F] = "RC RDMA READ Response Last", [0x10] = "RC RDMA READ Response Only",
    [0x11] = "RC Acknowledge", [0x12] = "RC ATOMIC Acknowledge",
    [0x13] = "RC CmpSwap", [0x14] = "RC FetchAdd",
    [0x16] = "RC SEND Last with Invalidate", [0x17] = "RC SEND Only with Invalidate",
    [0x20] = "UC SEND First", [0x21] = "UC SEND Middle", [0x22] = "UC SEND Last",
    [0x24] = "UC SEND Only", [0x2A] = "UC RDMA WRITE Only",
    [0x64] = "UD SEND Only", [0x65] = "UD SEND Only with Immediate",
    [OP_CNP] = "CNP",
}
local bth_byte4_vals = {
    [0x00] = "none",
    [INC_BTH_MARK] = "INC mark: an INC header follows",
    [INT_BTH_MARK] = "INT mark: an INT header follows",
    [0x40] = "BECN",
    [0x80] = "FECN",
}
local ann_type_vals = { [1] = "Connection up", [2] = "Connection down" }
local ann_auth_type_vals = { [1] = "HMAC-SHA256-128" }
local set_vals = { "Set", "Not set" }

-- Fields.
local pf = {
    opcode = ProtoField.uint8("fastcnp.bth.opcode", "Opcode", base.HEX, opcode_vals,
        nil, "BTH opcode, with RoCEv2's CNP (0x81) named"),
    byte4 = ProtoField.uint8("fastcnp.bth.byte4", "BTH byte 4", base.HEX, bth_byte4_vals,
        nil, "BTH reserved byte 4 (resv8a): 0x01 marks an INC packet, 0x02 an INT packet"),
    ece = ProtoField.bool("fastcnp.bth.ece", "ECN echo (ECE: acknowledged data arrived CE-marked)", 8, set_vals, 0x40,
        "fastcnp's ECN echo in an RC ACK: BTH byte 8, bit 0x40 (reserved in IBTA)"),
    icrc = ProtoField.uint32("fastcnp.icrc", "ICRC", base.HEX, nil, nil,
        "Invariant CRC as the CRC-32 value (sent least-significant byte first); not verified"),

    cnp = ProtoField.none("fastcnp.cnp", "fastcnp CNP extension"),
    cnp_version = ProtoField.uint8("fastcnp.cnp.version", "Version", base.DEC, nil, 0xF0),
    cnp_flags = ProtoField.uint8("fastcnp.cnp.flags", "Flags", base.HEX, nil, 0x0F),
    cnp_flag_window = ProtoField.bool("fastcnp.cnp.flags.window_valid", "Window valid", 8, set_vals, 0x01),
    cnp_flag_switch = ProtoField.bool("fastcnp.cnp.flags.by_switch", "Made by a switch", 8, set_vals, 0x02),
    cnp_flag_resv = ProtoField.uint8("fastcnp.cnp.flags.reserved", "Reserved flags", base.HEX, nil, 0x0C),
    cnp_resv1 = ProtoField.uint8("fastcnp.cnp.reserved1", "Reserved", base.HEX),
    cnp_switch = ProtoField.uint16("fastcnp.cnp.switch_id", "Congestion-point switch ID", base.DEC),
    cnp_window = ProtoField.uint32("fastcnp.cnp.window", "Window (bytes)", base.DEC),
    cnp_port = ProtoField.uint16("fastcnp.cnp.port", "Egress port", base.DEC),
    cnp_queue = ProtoField.uint32("fastcnp.cnp.queue_bytes", "Queued bytes", base.DEC),
    cnp_resv2 = ProtoField.uint16("fastcnp.cnp.reserved2", "Reserved", base.HEX),
    cnp_plain = ProtoField.bool("fastcnp.cnp.plain", "Plain CNP (all-zero extension)"),

    inc = ProtoField.none("fastcnp.inc", "fastcnp INC header"),
    inc_flags = ProtoField.uint8("fastcnp.inc.flags", "Flags", base.HEX),
    inc_flag_ids = ProtoField.bool("fastcnp.inc.flags.ids", "IDS (INC ID and data flow ID follow)", 8, set_vals, 0x01),
    inc_flag_result = ProtoField.bool("fastcnp.inc.flags.result", "RESULT (the final aggregate)", 8, set_vals, 0x02),
    inc_flag_partial = ProtoField.bool("fastcnp.inc.flags.partial", "PARTIAL (a partial aggregate on its way up)", 8, set_vals, 0x04),
    inc_flag_resv = ProtoField.uint8("fastcnp.inc.flags.reserved", "Reserved flags", base.HEX, nil, 0xF8),
    inc_kind = ProtoField.string("fastcnp.inc.kind", "Kind"),
    inc_version = ProtoField.uint8("fastcnp.inc.version", "Version", base.DEC),
    inc_resv = ProtoField.uint16("fastcnp.inc.reserved", "Reserved", base.HEX),
    inc_group = ProtoField.uint16("fastcnp.inc.group", "Communication-group ID", base.DEC),
    inc_msg = ProtoField.uint16("fastcnp.inc.msg", "INC message ID", base.DEC),
    inc_id = ProtoField.uint32("fastcnp.inc.id", "INC ID (group << 16 | message)", base.HEX),
    inc_resv1 = ProtoField.uint8("fastcnp.inc.reserved1", "Reserved", base.HEX),
    inc_first_psn = ProtoField.uint24("fastcnp.inc.first_psn", "First PSN of the data flow", base.DEC),
    inc_op = ProtoField.uint16("fastcnp.inc.op_id", "Communication-operation ID", base.DEC),
    inc_resv2 = ProtoField.uint16("fastcnp.inc.reserved2", "Reserved", base.HEX),
    inc_flow_len = ProtoField.uint32("fastcnp.inc.flow_len", "Data flow length (packets)", base.DEC),
    inc_vector = ProtoField.none("fastcnp.inc.vector", "Vector"),
    inc_elem = ProtoField.int32("fastcnp.inc.vector.elem", "Element", base.DEC),
    inc_trailing = ProtoField.bytes("fastcnp.inc.trailing", "Bytes after the vector"),

    ann = ProtoField.none("fastcnp.ann", "fastcnp RDMA-connection announcement"),
    ann_magic = ProtoField.uint32("fastcnp.ann.magic", "Magic", base.HEX, { [ANN_MAGIC] = "FCNP" }),
    ann_version = ProtoField.uint8("fastcnp.ann.version", "Version", base.DEC),
    ann_type = ProtoField.uint8("fastcnp.ann.type", "Type", base.DEC, ann_type_vals),
    ann_flags = ProtoField.uint8("fastcnp.ann.flags", "Flags", base.HEX),
    ann_flag_inc = ProtoField.bool("fastcnp.ann.flags.inc_uplink", "INC uplink", 8, set_vals, 0x01),
    ann_flag_cnp = ProtoField.bool("fastcnp.ann.flags.cnp_target", "CNP target (wants switch CNPs)", 8, set_vals, 0x02),
    ann_flag_resv = ProtoField.uint8("fastcnp.ann.flags.reserved", "Reserved flags", base.HEX, nil, 0xFC),
    ann_rank = ProtoField.uint8("fastcnp.ann.rank", "Worker rank", base.DEC),
    ann_sender_ip = ProtoField.ipv4("fastcnp.ann.sender_ip", "Sender IP"),
    ann_receiver_ip = ProtoField.ipv4("fastcnp.ann.receiver_ip", "Receiver IP"),
    ann_udp_sport = ProtoField.uint16("fastcnp.ann.udp_srcport", "RoCEv2 UDP source port", base.DEC),
    ann_resv1 = ProtoField.uint16("fastcnp.ann.reserved1", "Reserved", base.HEX),
    ann_resv2 = ProtoField.uint8("fastcnp.ann.reserved2", "Reserved", base.HEX),
    ann_sender_qpn = ProtoField.uint24("fastcnp.ann.sender_qpn", "Sender QPN", base.HEX),
    ann_resv3 = ProtoField.uint8("fastcnp.ann.reserved3", "Reserved", base.HEX),
    ann_receiver_qpn = ProtoField.uint24("fastcnp.ann.receiver_qpn", "Receiver QPN", base.HEX),
    ann_inc_group = ProtoField.uint16("fastcnp.ann.inc_group", "INC communication-group ID", base.DEC),
    ann_resv4 = ProtoField.uint16("fastcnp.ann.reserved4", "Reserved", base.HEX),
    ann_auth = ProtoField.none("fastcnp.ann.auth", "Authentication"),
    ann_auth_type = ProtoField.uint8("fastcnp.ann.auth.type", "Authentication type", base.DEC, ann_auth_type_vals),
    ann_auth_resv1 = ProtoField.uint8("fastcnp.ann.auth.reserved1", "Reserved", base.HEX),
    ann_auth_resv2 = ProtoField.uint16("fastcnp.ann.auth.reserved2", "Reserved", base.HEX),
    ann_auth_key_id = ProtoField.uint32("fastcnp.ann.auth.key_id", "Key ID", base.DEC),
    ann_auth_timestamp = ProtoField.absolute_time("fastcnp.ann.auth.timestamp", "Timestamp", base.UTC),
    ann_auth_nonce = ProtoField.uint64("fastcnp.ann.auth.nonce", "Nonce", base.HEX),
    ann_auth_tag = ProtoField.bytes("fastcnp.ann.auth.tag", "Tag (HMAC-SHA256, first 16 bytes)"),
    ann_trailing = ProtoField.bytes("fastcnp.ann.trailing", "Bytes after the announcement"),

    int = ProtoField.none("fastcnp.int", "fastcnp INT header"),
    int_flags = ProtoField.uint8("fastcnp.int.flags", "Flags", base.HEX),
    int_flag_echo = ProtoField.bool("fastcnp.int.flags.echo", "ECHO (records echoed by a receiver in an ACK)", 8, set_vals, 0x01),
    int_flag_resv = ProtoField.uint8("fastcnp.int.flags.reserved", "Reserved flags", base.HEX, nil, 0xFE),
    int_version = ProtoField.uint8("fastcnp.int.version", "Version", base.DEC),
    int_hop_count = ProtoField.uint8("fastcnp.int.hop_count", "Hop count", base.DEC),
    int_resv = ProtoField.uint8("fastcnp.int.reserved", "Reserved", base.HEX),
    int_hop = ProtoField.none("fastcnp.int.hop", "Hop record"),
    int_hop_ts = ProtoField.uint64("fastcnp.int.hop.timestamp_ns", "Egress timestamp (ns)", base.DEC),
    int_hop_port = ProtoField.uint16("fastcnp.int.hop.port", "Egress port", base.DEC),
    int_hop_tx = ProtoField.uint64("fastcnp.int.hop.tx_bytes", "Bytes sent by the port before this packet", base.DEC),
    int_hop_qlen = ProtoField.uint32("fastcnp.int.hop.queue_bytes", "Queue (bytes)", base.DEC),
    int_hop_rate = ProtoField.uint32("fastcnp.int.hop.rate_bytes_per_ms", "Link rate (bytes per ms)", base.DEC),
    int_hop_gbps = ProtoField.double("fastcnp.int.hop.rate_gbps", "Link rate (Gb/s)"),
    int_aeth_syndrome = ProtoField.uint8("fastcnp.int.aeth.syndrome", "AETH syndrome (after the records)", base.HEX),
    int_aeth_msn = ProtoField.uint24("fastcnp.int.aeth.msn", "AETH MSN (after the records)", base.DEC),
}
-- Registration order (the order of the field list in Wireshark).
local pf_order = {
    "opcode", "byte4", "ece", "icrc", "cnp", "cnp_version", "cnp_flags", "cnp_flag_window",
    "cnp_flag_switch", "cnp_flag_resv", "cnp_resv1", "cnp_switch", "cnp_window", "cnp_port",
    "cnp_queue", "cnp_resv2", "cnp_plain", "inc", "inc_flags", "inc_flag_ids",
    "inc_flag_result", "inc_flag_partial", "inc_flag_resv", "inc_kind", "inc_version", "inc_resv", "inc_group", "inc_msg",
    "inc_id", "inc_resv1", "inc_first_psn", "inc_op", "inc_resv2", "inc_flow_len",
    "inc_vector", "inc_elem", "inc_trailing", "ann", "ann_magic", "ann_version", "ann_type",
    "ann_flags", "ann_flag_inc", "ann_flag_cnp", "ann_flag_resv", "ann_rank", "ann_sender_ip",
    "ann_receiver_ip", "ann_udp_sport", "ann_resv1", "ann_resv2", "ann_sender_qpn",
    "ann_resv3", "ann_receiver_qpn", "ann_inc_group", "ann_resv4", "ann_auth", "ann_auth_type",
    "ann_auth_resv1", "ann_auth_resv2", "ann_auth_key_id", "ann_auth_timestamp", "ann_auth_nonce",
    "ann_auth_tag", "ann_trailing",
    "int", "int_flags", "int_flag_echo", "int_flag_resv", "int_version", "int_hop_count",
    "int_resv", "int_hop", "int_hop_ts", "int_hop_port", "int_hop_tx", "int_hop_qlen",
    "int_hop_rate", "int_hop_gbps", "int_aeth_syndrome", "int_aeth_msn"
}
local field_list = {}
for i, k in ipairs(pf_order) do field_list[i] = assert(pf[k], k) end
local function count(t) local n = 0; for _ in pairs(t) do n = n + 1 end; return n end
assert(count(pf) == #field_list, "fastcnp.lua: pf_order does not list every field")
fastcnp.fields = field_list

-- Expert info.
local ef = {
    truncated = ProtoExpert.new("fastcnp.truncated", "fastcnp header truncated",
        expert.group.MALFORMED, expert.severity.ERROR),
    cut = ProtoExpert.new("fastcnp.capture_cut", "fastcnp header cut by the capture (snap length)",
        expert.group.UNDECODED, expert.severity.WARN),
    bad_magic = ProtoExpert.new("fastcnp.ann.bad_magic", "Announcement magic is not 0x46434E50 (FCNP)",
        expert.group.MALFORMED, expert.severity.ERROR),
    ann_bad_version = ProtoExpert.new("fastcnp.ann.bad_version", "Unsupported announcement version (the switch drops it as malformed)",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_version = ProtoExpert.new("fastcnp.bad_version", "Unknown CNP extension, INC or INT header version",
        expert.group.PROTOCOL, expert.severity.WARN),
    int_too_many = ProtoExpert.new("fastcnp.int.too_many_hops", "INT hop count above 5 (the switch drops the packet as malformed)",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_type = ProtoExpert.new("fastcnp.ann.unknown_type", "Unknown announcement type (ignored and counted by the controller)",
        expert.group.PROTOCOL, expert.severity.WARN),
    unknown_auth = ProtoExpert.new("fastcnp.ann.auth.unknown_type", "Unknown authentication type (the controller refuses it: bad_tag)",
        expert.group.PROTOCOL, expert.severity.WARN),
    reserved = ProtoExpert.new("fastcnp.reserved_nonzero", "Reserved bits are not zero",
        expert.group.PROTOCOL, expert.severity.WARN),
    trailing = ProtoExpert.new("fastcnp.trailing", "Unexpected bytes after the fastcnp header",
        expert.group.PROTOCOL, expert.severity.NOTE),
    plain = ProtoExpert.new("fastcnp.cnp.plain_cnp", "Plain CNP (all-zero fastcnp extension)",
        expert.group.SEQUENCE, expert.severity.CHAT),
}
local ef_order = {
    "truncated", "cut", "bad_magic", "ann_bad_version", "bad_version", "int_too_many", "unknown_type",
    "unknown_auth", "reserved", "trailing", "plain"
}
local expert_list = {}
for i, k in ipairs(ef_order) do expert_list[i] = assert(ef[k], k) end
assert(count(ef) == #expert_list, "fastcnp.lua: ef_order does not list every expert field")
fastcnp.experts = expert_list

-- Preferences.
fastcnp.prefs.announce_port = Pref.uint("Announcement UDP port", DEFAULT_ANNOUNCE_PORT,
    "UDP destination port of RDMA-connection announcements (0 = do not decode them)")

-- truncated adds expert info for a header that needs need bytes at off
-- when only have of them can be read. lim is where the header's bytes end
-- on the wire (the reported length): if the packet had them, the capture
-- cut it (snap length); otherwise the packet itself is short (malformed).
local function truncated(tree, tvb, off, lim, what, need, have)
    local e, msg = ef.truncated, string.format("%s truncated: %d of %d bytes", what, have, need)
    if lim - off >= need then
        e, msg = ef.cut, string.format("%s cut by the capture: %d of %d bytes captured", what, have, need)
    end
    if have > 0 and off + have <= tvb:len() then
        tree:add_tvb_expert_info(e, tvb(off, have), msg)
    else
        tree:add_proto_expert_info(e, msg)
    end
end

-- avail returns how many bytes from off up to lim can be read (captured).
local function avail(tvb, off, lim)
    local n = math.min(lim, tvb:len()) - off
    if n < 0 then return 0 end
    return n
end

-- flag_names lists the names of the bits of v that are set, low bit first
-- (names: a list of {bit, name}).
local function flag_names(v, names)
    local t = {}
    for _, bn in ipairs(names) do
        if bit32.band(v, bn[1]) ~= 0 then t[#t + 1] = bn[2] end
    end
    return table.concat(t, ", ")
end

-- dissect_cnp_ext decodes the CNP extension in tvb[off:lim) (lim: start of
-- the ICRC) and returns a one-line summary for the Info column.
local function dissect_cnp_ext(tvb, off, lim, pinfo, tree)
    local have = avail(tvb, off, lim)
    local len = math.min(have, CNP_EXT_LEN)
    local t
    if len > 0 then
        t = tree:add(pf.cnp, tvb(off, len))
    else
        t = tree:add(pf.cnp, tvb(0, 0))
    end
    if have < CNP_EXT_LEN then
        t:append_text(" [truncated]")
        truncated(t, tvb, off, lim, "fastcnp CNP extension", CNP_EXT_LEN, have)
        -- Decode what fits, field by field.
    end
    local function fits(o, n) return o + n <= off + have end
    local zero = true -- the (captured part of the) extension is all zeros
    for i = 0, len - 1 do
        if tvb(off + i, 1):uint() ~= 0 then zero = false; break end
    end
    local summary = {}
    if fits(off, 1) then
        local b0 = tvb(off, 1):uint()
        local ver, flags = bit32.rshift(b0, 4), bit32.band(b0, 0x0F)
        local vi = t:add(pf.cnp_version, tvb(off, 1))
        local fi = t:add(pf.cnp_flags, tvb(off, 1))
        local fnames = flag_names(flags, { { 0x1, "window valid" }, { 0x2, "by switch" } })
        if fnames ~= "" then fi:append_text(" (" .. fnames .. ")") end
        fi:add(pf.cnp_flag_window, tvb(off, 1))
        fi:add(pf.cnp_flag_switch, tvb(off, 1))
        local ri = fi:add(pf.cnp_flag_resv, tvb(off, 1))
        if bit32.band(flags, 0x0C) ~= 0 then ri:add_proto_expert_info(ef.reserved) end
        if ver ~= CNP_EXT_VERSION and not zero then
            vi:add_proto_expert_info(ef.bad_version,
                string.format("CNP extension version %d, expected %d", ver, CNP_EXT_VERSION))
        end
    end
    local function resv(field, o, n)
        if not fits(o, n) then return end
        local it = t:add(field, tvb(o, n))
        if tvb(o, n):uint() ~= 0 then it:add_proto_expert_info(ef.reserved) end
    end
    resv(pf.cnp_resv1, off + 1, 1)
    if fits(off + 2, 2) then
        t:add(pf.cnp_switch, tvb(off + 2, 2))
        summary[#summary + 1] = "switch=" .. tvb(off + 2, 2):uint()
    end
    if fits(off + 4, 4) then
        t:add(pf.cnp_window, tvb(off + 4, 4))
        summary[#summary + 1] = "window=" .. tvb(off + 4, 4):uint()
    end
    if fits(off + 8, 2) then
        t:add(pf.cnp_port, tvb(off + 8, 2))
        summary[#summary + 1] = "port=" .. tvb(off + 8, 2):uint()
    end
    if fits(off + 10, 4) then
        t:add(pf.cnp_queue, tvb(off + 10, 4))
        summary[#summary + 1] = "queue=" .. tvb(off + 10, 4):uint()
    end
    resv(pf.cnp_resv2, off + 14, 2)
    if have < CNP_EXT_LEN then
        return "[fastcnp extension truncated]"
    end
    local pi = t:add(pf.cnp_plain, tvb(off, CNP_EXT_LEN), zero)
    pi:set_generated()
    if zero then
        t:append_text(": plain CNP")
        pi:add_proto_expert_info(ef.plain)
        return "plain"
    end
    if have > CNP_EXT_LEN then
        t:add_tvb_expert_info(ef.trailing, tvb(off + CNP_EXT_LEN, have - CNP_EXT_LEN),
            string.format("%d bytes between the CNP extension and the ICRC", have - CNP_EXT_LEN))
    end
    t:append_text(": " .. table.concat(summary, " "))
    return table.concat(summary, " ")
end

-- header_tree adds the tree item of a header starting at off (covering the
-- bytes up to lim) and, when fewer than need bytes are there, marks it
-- truncated; it returns the item and whether the header is whole.
local function header_tree(tvb, off, lim, tree, field, what, need)
    local have = avail(tvb, off, lim)
    local t
    if have > 0 then
        t = tree:add(field, tvb(off, have))
    else
        t = tree:add(field, tvb(0, 0))
    end
    if have < need then
        t:append_text(" [truncated]")
        truncated(t, tvb, off, lim, what, need, have)
        return t, false
    end
    return t, true
end

-- dissect_inc decodes the INC header in tvb[off:lim) (lim: start of the
-- ICRC) and returns a one-line summary for the Info column.
local function dissect_inc(tvb, off, lim, pinfo, tree)
    local t, whole = header_tree(tvb, off, lim, tree, pf.inc, "INC base header", INC_LEN)
    if not whole then return "INC [truncated]" end
    local flags = tvb(off, 1):uint()
    local fi = t:add(pf.inc_flags, tvb(off, 1))
    local fnames = flag_names(flags, { { 0x1, "IDS" }, { 0x2, "RESULT" }, { 0x4, "PARTIAL" } })
    if fnames ~= "" then fi:append_text(" (" .. fnames .. ")") end
    fi:add(pf.inc_flag_ids, tvb(off, 1))
    fi:add(pf.inc_flag_result, tvb(off, 1))
    fi:add(pf.inc_flag_partial, tvb(off, 1))
    local ri = fi:add(pf.inc_flag_resv, tvb(off, 1))
    if bit32.band(flags, 0xF8) ~= 0 then ri:add_proto_expert_info(ef.reserved) end
    -- The kind (docs/wire-formats.md "INC header"): RESULT wins over PARTIAL.
    local kind = "contribution"
    if bit32.band(flags, 0x2) ~= 0 then
        kind = "result"
    elseif bit32.band(flags, 0x4) ~= 0 then
        kind = "partial aggregate"
    end
    t:add(pf.inc_kind, tvb(off, 1), kind):set_generated()
    local ver = tvb(off + 1, 1):uint()
    local vi = t:add(pf.inc_version, tvb(off + 1, 1))
    if ver ~= INC_VERSION then
        vi:add_proto_expert_info(ef.bad_version, string.format("INC version %d, expected %d", ver, INC_VERSION))
    end
    local ri2 = t:add(pf.inc_resv, tvb(off + 2, 2))
    if tvb(off + 2, 2):uint() ~= 0 then ri2:add_proto_expert_info(ef.reserved) end
    local summary = "INC"
    if fnames ~= "" then summary = summary .. " " .. fnames end
    local o = off + INC_LEN
    if bit32.band(flags, 0x1) ~= 0 then
        local n = avail(tvb, o, lim)
        if n < INC_IDS_LEN then
            t:append_text(" [truncated]")
            truncated(t, tvb, o, lim, "INC IDS part", INC_IDS_LEN, n)
            return summary .. " [truncated]"
        end
        local group, msg = tvb(o, 2):uint(), tvb(o + 2, 2):uint()
        t:add(pf.inc_group, tvb(o, 2))
        t:add(pf.inc_msg, tvb(o + 2, 2))
        t:add(pf.inc_id, tvb(o, 4), group * 65536 + msg):set_generated()
        local r1 = t:add(pf.inc_resv1, tvb(o + 4, 1))
        if tvb(o + 4, 1):uint() ~= 0 then r1:add_proto_expert_info(ef.reserved) end
        t:add(pf.inc_first_psn, tvb(o + 5, 3))
        t:add(pf.inc_op, tvb(o + 8, 2))
        local r2 = t:add(pf.inc_resv2, tvb(o + 10, 2))
        if tvb(o + 10, 2):uint() ~= 0 then r2:add_proto_expert_info(ef.reserved) end
        t:add(pf.inc_flow_len, tvb(o + 12, 4))
        summary = summary .. string.format(" id=0x%08x first_psn=%d op=%d flow_len=%d",
            group * 65536 + msg, tvb(o + 5, 3):uint(), tvb(o + 8, 2):uint(), tvb(o + 12, 4):uint())
        o = o + INC_IDS_LEN
    end
    local n = avail(tvb, o, lim)
    if n < INC_VECTOR_BYTES then
        if n > 0 then t:add(pf.inc_vector, tvb(o, n)):append_text(" [truncated]") end
        t:append_text(" [truncated]")
        truncated(t, tvb, o, lim, "INC vector", INC_VECTOR_BYTES, n)
        return summary .. " [truncated]"
    end
    local vt = t:add(pf.inc_vector, tvb(o, INC_VECTOR_BYTES))
    vt:append_text(string.format(" (%d x int32)", INC_VECTOR_LEN))
    for i = 0, INC_VECTOR_LEN - 1 do
        vt:add(pf.inc_elem, tvb(o + 4 * i, 4)):prepend_text(string.format("[%d] ", i))
    end
    o = o + INC_VECTOR_BYTES
    local rest = avail(tvb, o, lim)
    if rest > 0 then
        local it = t:add(pf.inc_trailing, tvb(o, rest))
        it:add_proto_expert_info(ef.trailing,
            string.format("%d bytes between the INC vector and the ICRC", rest))
    end
    t:append_text(": " .. summary:sub(5))
    return summary
end

-- dissect_int decodes the INT header and its records in tvb[off:lim) (lim:
-- start of the ICRC), and for an ACK the AETH after them, and returns a
-- one-line summary for the Info column.
local function dissect_int(tvb, off, lim, pinfo, tree, opcode)
    local t, whole = header_tree(tvb, off, lim, tree, pf.int, "INT header", INT_HDR_LEN)
    if not whole then return "INT [truncated]" end
    local flags = tvb(off, 1):uint()
    local fi = t:add(pf.int_flags, tvb(off, 1))
    if bit32.band(flags, 0x1) ~= 0 then fi:append_text(" (ECHO)") end
    fi:add(pf.int_flag_echo, tvb(off, 1))
    local ri = fi:add(pf.int_flag_resv, tvb(off, 1))
    if bit32.band(flags, 0xFE) ~= 0 then ri:add_proto_expert_info(ef.reserved) end
    local ver = tvb(off + 1, 1):uint()
    local vi = t:add(pf.int_version, tvb(off + 1, 1))
    if ver ~= INT_VERSION then
        vi:add_proto_expert_info(ef.bad_version, string.format("INT version %d, expected %d", ver, INT_VERSION))
    end
    local n = tvb(off + 2, 1):uint()
    local ni = t:add(pf.int_hop_count, tvb(off + 2, 1))
    local r2 = t:add(pf.int_resv, tvb(off + 3, 1))
    if tvb(off + 3, 1):uint() ~= 0 then r2:add_proto_expert_info(ef.reserved) end
    local summary = "INT"
    if bit32.band(flags, 0x1) ~= 0 then summary = summary .. " ECHO" end
    summary = summary .. string.format(" hops=%d", n)
    if n > INT_MAX_HOPS then
        ni:add_proto_expert_info(ef.int_too_many)
        t:append_text(": " .. summary:sub(5))
        return summary
    end
    local o = off + INT_HDR_LEN
    for i = 0, n - 1 do
        local m = avail(tvb, o, lim)
        if m < INT_HOP_LEN then
            t:append_text(" [truncated]")
            truncated(t, tvb, o, lim, string.format("INT hop record %d", i), INT_HOP_LEN, m)
            return summary .. " [truncated]"
        end
        local h = t:add(pf.int_hop, tvb(o, INT_HOP_LEN))
        local port, q, rate = tvb(o + 6, 2):uint(), tvb(o + 16, 4):uint(), tvb(o + 20, 4):uint()
        h:append_text(string.format(" %d: port %d, queue %d B, %.1f Gb/s", i, port, q, rate * 8000 / 1e9))
        h:add(pf.int_hop_ts, tvb(o, 6), tvb(o, 6):uint64())
        h:add(pf.int_hop_port, tvb(o + 6, 2))
        h:add(pf.int_hop_tx, tvb(o + 8, 8))
        h:add(pf.int_hop_qlen, tvb(o + 16, 4))
        h:add(pf.int_hop_rate, tvb(o + 20, 4))
        h:add(pf.int_hop_gbps, tvb(o + 20, 4), rate * 8000 / 1e9):set_generated()
        summary = summary .. string.format(" [port=%d q=%d]", port, q)
        o = o + INT_HOP_LEN
    end
    if opcode == OP_ACK then
        local m = avail(tvb, o, lim)
        if m < AETH_LEN then
            t:append_text(" [truncated]")
            truncated(t, tvb, o, lim, "AETH after the INT records", AETH_LEN, m)
            return summary .. " [truncated]"
        end
        t:add(pf.int_aeth_syndrome, tvb(o, 1))
        t:add(pf.int_aeth_msn, tvb(o + 1, 3))
        summary = summary .. string.format(" AETH syndrome=0x%02x msn=%d", tvb(o, 1):uint(), tvb(o + 1, 3):uint())
    end
    t:append_text(": " .. summary:sub(5))
    return summary
end

-- info_append appends s to the Info column, after a space.
local function info_append(pinfo, s)
    local info = tostring(pinfo.cols.info)
    if info ~= "" and info:sub(-1) ~= " " then s = " " .. s end
    pinfo.cols.info:append(s .. " ")
end

-- dissect_roce adds the fastcnp tree of a RoCEv2 UDP payload (BTH at 0)
-- whose BTH was already decoded by Wireshark's InfiniBand dissector.
local function dissect_roce(tvb, pinfo, tree)
    local cap, rep = tvb:len(), tvb:reported_len()
    if cap < 5 or rep < BTH_LEN then
        return -- no BTH: the InfiniBand dissector reports it
    end
    local opcode, byte4 = tvb(0, 1):uint(), tvb(4, 1):uint()
    local is_cnp = opcode == OP_CNP
    local ece = opcode == OP_ACK and cap >= 9 and bit32.band(tvb(8, 1):uint(), 0x40) ~= 0
    if not is_cnp and byte4 ~= INC_BTH_MARK and byte4 ~= INT_BTH_MARK and not ece then
        return -- a plain RoCEv2 packet
    end
    local lim = rep - ICRC_LEN -- start of the ICRC
    local t = tree:add(fastcnp, tvb(0, math.min(cap, rep)))
    local oi = t:add(pf.opcode, tvb(0, 1))
    t:add(pf.byte4, tvb(4, 1))
    if opcode == OP_ACK and cap >= 9 then
        t:add(pf.ece, tvb(8, 1))
        if ece then
            t:append_text(", ECE")
            info_append(pinfo, "ECE")
        end
    end
    if is_cnp then
        t:append_text(", CNP")
        oi:append_text(" (RoCEv2 congestion notification packet)")
        local s = dissect_cnp_ext(tvb, BTH_LEN, lim, pinfo, t)
        if lim >= BTH_LEN and lim + ICRC_LEN <= cap then
            t:add_le(pf.icrc, tvb(lim, ICRC_LEN))
        end
        -- Wireshark 4.0 writes "Unknown OpCode" for 0x81: name it.
        local info = tostring(pinfo.cols.info)
        local named, n = info:gsub("Unknown OpCode%s*", "CNP ", 1)
        if n == 0 then named = "CNP " .. info end
        pinfo.cols.info:set(named)
        info_append(pinfo, s)
    elseif byte4 ~= INT_BTH_MARK and byte4 ~= INC_BTH_MARK then
        return -- an ACK with the ECN echo only
    elseif byte4 == INT_BTH_MARK then
        t:append_text(", INT")
        local s = dissect_int(tvb, BTH_LEN, lim, pinfo, t, opcode)
        info_append(pinfo, s)
    else
        t:append_text(", INC")
        local s = dissect_inc(tvb, BTH_LEN, lim, pinfo, t)
        info_append(pinfo, s)
    end
end

-- dissect_ann_auth decodes the authentication trailer at off (what
-- follows the announcement, up to have bytes; rep is the reported length)
-- and returns its key ID, or nil when there is none or it is cut.
local function dissect_ann_auth(tvb, off, have, rep, tree)
    if have <= off then return nil end
    local t, whole = header_tree(tvb, off, math.min(rep, off + ANN_AUTH_LEN), tree, pf.ann_auth,
        "Announcement authentication", ANN_AUTH_LEN)
    if not whole then return nil end
    local typ = tvb(off, 1):uint()
    local ti = t:add(pf.ann_auth_type, tvb(off, 1))
    if ann_auth_type_vals[typ] == nil then ti:add_proto_expert_info(ef.unknown_auth) end
    for _, r in ipairs({ { pf.ann_auth_resv1, 1, 1 }, { pf.ann_auth_resv2, 2, 2 } }) do
        local it = t:add(r[1], tvb(off + r[2], r[3]))
        if tvb(off + r[2], r[3]):uint() ~= 0 then it:add_proto_expert_info(ef.reserved) end
    end
    local key = tvb(off + 4, 4):uint()
    t:add(pf.ann_auth_key_id, tvb(off + 4, 4))
    local ts = tvb(off + 8, 8):uint64()
    local secs, ns = (ts / 1000000000):tonumber(), (ts % 1000000000):tonumber()
    t:add(pf.ann_auth_timestamp, tvb(off + 8, 8), NSTime.new(secs, ns))
    t:add(pf.ann_auth_nonce, tvb(off + 16, 8))
    t:add(pf.ann_auth_tag, tvb(off + 24, 16))
    t:append_text(string.format(": key %d", key))
    if have > off + ANN_AUTH_LEN then
        local extra = have - off - ANN_AUTH_LEN
        local it = tree:add(pf.ann_trailing, tvb(off + ANN_AUTH_LEN, extra))
        it:add_proto_expert_info(ef.trailing,
            string.format("%d bytes after the announcement's authentication trailer", extra))
    end
    return key
end

-- dissect_ann decodes an announcement (the whole UDP payload).
local function dissect_ann(tvb, pinfo, tree)
    pinfo.cols.protocol:set("fastcnp")
    local cap, rep = tvb:len(), tvb:reported_len()
    local have = math.min(cap, rep)
    local top = tree:add(fastcnp, tvb(0, have))
    top:append_text(", announcement")
    local t
    if have > 0 then
        t = top:add(pf.ann, tvb(0, math.min(have, ANN_LEN)))
    else
        t = top:add(pf.ann, tvb(0, 0))
    end
    if have < ANN_LEN then
        t:append_text(" [truncated]")
        truncated(t, tvb, 0, rep, "Announcement", ANN_LEN, have)
        pinfo.cols.info:set(string.format("fastcnp announcement [%d of %d bytes]", have, ANN_LEN))
        return
    end
    local magic, ver = tvb(0, 4):uint(), tvb(4, 1):uint()
    local mi = t:add(pf.ann_magic, tvb(0, 4))
    if magic ~= ANN_MAGIC then mi:add_proto_expert_info(ef.bad_magic) end
    local vi = t:add(pf.ann_version, tvb(4, 1))
    if ver ~= ANN_VERSION then
        vi:add_proto_expert_info(ef.ann_bad_version, string.format("Announcement version %d, expected %d", ver, ANN_VERSION))
    end
    local typ = tvb(5, 1):uint()
    local ti = t:add(pf.ann_type, tvb(5, 1))
    if ann_type_vals[typ] == nil then ti:add_proto_expert_info(ef.unknown_type) end
    local flags = tvb(6, 1):uint()
    local fi = t:add(pf.ann_flags, tvb(6, 1))
    local fnames = flag_names(flags, { { 0x1, "INC uplink" }, { 0x2, "CNP target" } })
    if fnames ~= "" then fi:append_text(" (" .. fnames .. ")") end
    fi:add(pf.ann_flag_inc, tvb(6, 1))
    fi:add(pf.ann_flag_cnp, tvb(6, 1))
    local fr = fi:add(pf.ann_flag_resv, tvb(6, 1))
    if bit32.band(flags, 0xFC) ~= 0 then fr:add_proto_expert_info(ef.reserved) end
    t:add(pf.ann_rank, tvb(7, 1))
    t:add(pf.ann_sender_ip, tvb(8, 4))
    t:add(pf.ann_receiver_ip, tvb(12, 4))
    t:add(pf.ann_udp_sport, tvb(16, 2))
    local function resv(field, o, n)
        local it = t:add(field, tvb(o, n))
        if tvb(o, n):uint() ~= 0 then it:add_proto_expert_info(ef.reserved) end
    end
    resv(pf.ann_resv1, 18, 2)
    resv(pf.ann_resv2, 20, 1)
    t:add(pf.ann_sender_qpn, tvb(21, 3))
    resv(pf.ann_resv3, 24, 1)
    t:add(pf.ann_receiver_qpn, tvb(25, 3))
    t:add(pf.ann_inc_group, tvb(28, 2))
    resv(pf.ann_resv4, 30, 2)
    local key = dissect_ann_auth(tvb, ANN_LEN, have, rep, top)
    local s = string.format("fastcnp announcement: %s %s:%d -> %s QPN 0x%06x -> 0x%06x",
        ann_type_vals[typ] or string.format("type %d", typ),
        tostring(tvb(8, 4):ipv4()), tvb(16, 2):uint(), tostring(tvb(12, 4):ipv4()),
        tvb(21, 3):uint(), tvb(25, 3):uint())
    if fnames ~= "" then s = s .. " [" .. fnames .. "]" end
    local group = tvb(28, 2):uint()
    if group ~= 0 then s = s .. string.format(" INC group %d rank %d", group, tvb(7, 1):uint()) end
    if key ~= nil then s = s .. string.format(" [authenticated, key %d]", key) end
    t:append_text(": " .. (ann_type_vals[typ] or string.format("type %d", typ)))
    pinfo.cols.info:set(s)
end

-- The dissector that was on udp.port 4791 (Wireshark's RoCEv2/InfiniBand).
local udp_table = DissectorTable.get("udp.port")
local roce_orig = udp_table:get_dissector(ROCE_PORT)

-- inc_pending is true while the InfiniBand dissector runs on an INC or INT
-- packet: then fastcnp's heuristic on "infiniband.payload" claims the payload,
-- so that no other heuristic (RPC over RDMA, SMB Direct, ...) misreads the
-- header; the fastcnp tree is added after the InfiniBand dissector returns.
local inc_pending = false

local function inc_payload_heur(tvb, pinfo, tree)
    if not inc_pending then return false end
    inc_pending = false
    return true
end

function fastcnp.dissector(tvb, pinfo, tree)
    if pinfo.match_uint == ROCE_PORT then
        if roce_orig ~= nil then
            inc_pending = tvb:len() >= 5 and tvb(0, 1):uint() ~= OP_CNP and
                (tvb(4, 1):uint() == INC_BTH_MARK or tvb(4, 1):uint() == INT_BTH_MARK)
            -- A short or odd packet can make the InfiniBand dissector throw;
            -- it has then already added its own "Malformed" item.
            pcall(roce_orig.call, roce_orig, tvb, pinfo, tree)
            inc_pending = false
        end
        dissect_roce(tvb, pinfo, tree)
        return tvb:len()
    end
    dissect_ann(tvb, pinfo, tree)
    return tvb:len()
end

udp_table:add(ROCE_PORT, fastcnp)
fastcnp:register_heuristic("infiniband.payload", inc_payload_heur)

local ann_port = 0
local function register_ann_port()
    local p = fastcnp.prefs.announce_port
    if p == ann_port then return end
    if ann_port ~= 0 and ann_port ~= ROCE_PORT then udp_table:remove(ann_port, fastcnp) end
    ann_port = 0
    if p ~= 0 and p ~= ROCE_PORT then
        udp_table:add(p, fastcnp)
        ann_port = p
    end
end

function fastcnp.prefs_changed()
    register_ann_port()
end

register_ann_port()
