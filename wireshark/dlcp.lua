-- Wireshark dissector for the DLCP header (DL-aware transport), Wireshark 4.0 or later.
--
-- GENERATED from dlcp_emu/wire/layout.py by `dlcp-emu wireshark --output wireshark/dlcp.lua`:
-- edit the layout or the generator (dlcp_emu/wire/wireshark.py), not this file.
--
-- Without installing:  tshark -X lua_script:wireshark/dlcp.lua -r capture.pcap
-- Installed:           dlcp-emu wireshark --install   (your Personal Lua Plugins folder)
-- Filters:             dlcp, dlcp.type == 0, dlcp.flags.droppable == 1, dlcp.tensor_id.phase == 1,
--                      dlcp.mag_class < 2, ... (a bare dlcp.flags.droppable matches every DLCP frame)

local DLCP_PORT = 9796
local MAGIC = 0xD1C9
local VERSION = 2
local HEADER_LEN = 48
local MAX_PAYLOAD = 65459
local FLAG_MASK = 0x0f
local TRIMMED = 0x04
local TOP_PRIORITY = 7
local TOP_MAG_CLASS = 7
local TOP_TCLASS = 5

local type_names = {[0] = "DATA", [1] = "PROBE", [2] = "BITMAP", [3] = "ACK"}
local priority_names = {[0] = "highest, DSCP CS7", [1] = "DSCP CS6", [2] = "DSCP CS5", [3] = "DSCP CS4", [4] = "DSCP CS3", [5] = "DSCP CS2", [6] = "DSCP CS1", [7] = "lowest, DSCP CS0"}
local mag_class_names = {[0] = "smallest |g|, dropped first", [1] = "|g| class 1 of 0-7", [2] = "|g| class 2 of 0-7", [3] = "|g| class 3 of 0-7", [4] = "|g| class 4 of 0-7", [5] = "|g| class 5 of 0-7", [6] = "|g| class 6 of 0-7", [7] = "largest |g|, dropped last"}
local tclass_names = {[0] = "none", [1] = "gradient", [2] = "activation", [3] = "activation-gradient", [4] = "parameters", [5] = "all-to-all"}

local dlcp = Proto("dlcp", "DL-aware transport (DLCP)")

-- One ProtoField per header field, in header order: {name, offset, size} below.
local f = {
    magic = ProtoField.uint16("dlcp.magic", "Magic", base.HEX, nil),
    version = ProtoField.uint8("dlcp.version", "Version", base.DEC, nil),
    type = ProtoField.uint8("dlcp.type", "Type", base.DEC, type_names),
    flags = ProtoField.uint8("dlcp.flags", "Flags", base.HEX, nil),
    priority = ProtoField.uint8("dlcp.priority", "Priority", base.DEC, priority_names),
    mag_class = ProtoField.uint8("dlcp.mag_class", "Magnitude class", base.DEC, mag_class_names),
    tclass = ProtoField.uint8("dlcp.tclass", "Traffic class", base.DEC, tclass_names),
    job = ProtoField.uint16("dlcp.job", "Job", base.DEC, nil),
    src_rank = ProtoField.uint16("dlcp.src_rank", "Source rank", base.DEC, nil),
    dst_rank = ProtoField.uint16("dlcp.dst_rank", "Destination rank", base.DEC, nil),
    payload_len = ProtoField.uint16("dlcp.payload_len", "Payload length", base.DEC, nil),
    iteration = ProtoField.uint32("dlcp.iteration", "Iteration", base.DEC, nil),
    tensor_id = ProtoField.uint32("dlcp.tensor_id", "Tensor id", base.DEC, nil),
    chunk_index = ProtoField.uint32("dlcp.chunk_index", "Chunk index", base.DEC, nil),
    chunk_count = ProtoField.uint32("dlcp.chunk_count", "Chunk count", base.DEC, nil),
    offset = ProtoField.uint32("dlcp.offset", "Offset", base.DEC, nil),
    reserved2 = ProtoField.uint32("dlcp.reserved2", "Reserved 2", base.DEC, nil),
    send_ts_ns = ProtoField.uint64("dlcp.send_ts_ns", "Send time (ns)", base.DEC, nil),
}
local LAYOUT = {
    {"magic", 0, 2},
    {"version", 2, 1},
    {"type", 3, 1},
    {"flags", 4, 1},
    {"priority", 5, 1},
    {"mag_class", 6, 1},
    {"tclass", 7, 1},
    {"job", 8, 2},
    {"src_rank", 10, 2},
    {"dst_rank", 12, 2},
    {"payload_len", 14, 2},
    {"iteration", 16, 4},
    {"tensor_id", 20, 4},
    {"chunk_index", 24, 4},
    {"chunk_count", 28, 4},
    {"offset", 32, 4},
    {"reserved2", 36, 4},
    {"send_ts_ns", 40, 8},
}
local FLAGS = {
    {"droppable", ProtoField.bool("dlcp.flags.droppable", "DROPPABLE", 8, nil, 0x01), 0x01},
    {"retransmission", ProtoField.bool("dlcp.flags.retransmission", "RETRANSMISSION", 8, nil, 0x02), 0x02},
    {"trimmed", ProtoField.bool("dlcp.flags.trimmed", "TRIMMED", 8, nil, 0x04), 0x04},
    {"last_chunk", ProtoField.bool("dlcp.flags.last_chunk", "LAST_CHUNK", 8, nil, 0x08), 0x08},
}
local tensor_layer = ProtoField.uint32("dlcp.tensor_id.layer", "Layer", base.DEC, nil, 0xFFFF0000)
local tensor_phase = ProtoField.uint32("dlcp.tensor_id.phase", "Phase", base.DEC, {[0] = "reduce-scatter/push", [1] = "all-gather/pull"}, 0x00008000)
local tensor_step = ProtoField.uint32("dlcp.tensor_id.step", "Step", base.DEC, nil, 0x00007FFF)
local payload = ProtoField.bytes("dlcp.payload", "Payload")

local fields = {tensor_layer, tensor_phase, tensor_step, payload}
for _, spec in ipairs(LAYOUT) do fields[#fields + 1] = f[spec[1]] end
for _, flag in ipairs(FLAGS) do fields[#fields + 1] = flag[2] end
dlcp.fields = fields

-- What the project's codec refuses is Malformed here, with the codec's own message.
local malformed = ProtoExpert.new("dlcp.malformed", "Malformed DLCP packet",
                                  expert.group.MALFORMED, expert.severity.ERROR)
dlcp.experts = {malformed}

local function bad(item, pinfo, text)
    item:add_proto_expert_info(malformed, text)
    pinfo.cols.info:append(" [Malformed: " .. text .. "]")
end

local function flag_names(v)
    local names = {}
    for _, flag in ipairs(FLAGS) do
        if bit.band(v, flag[3]) ~= 0 then names[#names + 1] = flag[1]:upper() end
    end
    return table.concat(names, ",")
end

function dlcp.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    if n < 2 or tvb(0, 2):uint() ~= MAGIC then
        return 0                      -- not DLCP: recognised by its magic, as the switches do
    end
    pinfo.cols.protocol = "DLCP"
    local t = tree:add(dlcp, tvb(0, math.min(n, HEADER_LEN)))
    local v, items = {}, {}
    for _, spec in ipairs(LAYOUT) do
        local name, off, size = spec[1], spec[2], spec[3]
        if off + size > n then
            local text = string.format("truncated DLCP header: need %d bytes, UDP carries %d", HEADER_LEN, n)
            pinfo.cols.info = "DLCP"
            bad(t, pinfo, text)
            return n
        end
        local range = tvb(off, size)
        items[name] = t:add(f[name], range)
        v[name] = (size == 8) and range:uint64() or range:uint()
        if name == "version" and v.version ~= VERSION then
            -- Another layout: what follows would be read at the wrong offsets.
            pinfo.cols.info = "DLCP"
            bad(items.version, pinfo, string.format("unsupported DLCP version %d, expected %d", v.version, VERSION))
            return n
        end
        if name == "flags" then
            for _, flag in ipairs(FLAGS) do items.flags:add(flag[2], range) end
        elseif name == "tensor_id" then
            items.tensor_id:add(tensor_layer, range)
            items.tensor_id:add(tensor_phase, range)
            items.tensor_id:add(tensor_step, range)
        end
    end
    pinfo.cols.info = string.format("%s %s job=%d it=%d tensor=%d chunk=%d/%d prio=%d mag=%d [%s]",
        type_names[v.type] or tostring(v.type), tclass_names[v.tclass] or tostring(v.tclass), v.job,
        v.iteration, v.tensor_id, v.chunk_index, v.chunk_count, v.priority, v.mag_class, flag_names(v.flags))
    t:append_text(", " .. (type_names[v.type] or "?"))
    -- The codec's checks, in its order and with its words (dlcp_emu/wire/header.py, frame.py).
    if type_names[v.type] == nil then
        bad(items.type, pinfo, string.format("unknown DLCP packet type %d; known: DATA=0, PROBE=1, BITMAP=2, ACK=3", v.type))
    end
    if bit.band(v.flags, bit.bnot(FLAG_MASK)) ~= 0 then
        bad(items.flags, pinfo, string.format("unknown DLCP flag bits 0x%02x in flags 0x%02x",
            bit.band(v.flags, bit.bnot(FLAG_MASK)), v.flags))
    end
    if v.priority > TOP_PRIORITY then
        bad(items.priority, pinfo, string.format("DLCP priority %d out of range 0..%d", v.priority, TOP_PRIORITY))
    end
    if v.mag_class > TOP_MAG_CLASS then
        bad(items.mag_class, pinfo, string.format("DLCP magnitude class %d out of range 0..%d", v.mag_class, TOP_MAG_CLASS))
    end
    if v.tclass > TOP_TCLASS then
        bad(items.tclass, pinfo, string.format("DLCP traffic class %d out of range 0..%d", v.tclass, TOP_TCLASS))
    end
    if v.reserved2 ~= 0 then
        bad(items.reserved2, pinfo, string.format("DLCP reserved field must be 0, got %d", v.reserved2))
    end
    local carried = n - HEADER_LEN
    if bit.band(v.flags, TRIMMED) ~= 0 then
        if carried ~= 0 then
            bad(items.flags, pinfo, string.format(
                "TRIMMED packet must carry no payload, but %d bytes follow the DLCP header", carried))
        elseif v.payload_len > MAX_PAYLOAD then
            bad(items.payload_len, pinfo, string.format(
                "TRIMMED packet's payload length %d exceeds the maximum %d", v.payload_len, MAX_PAYLOAD))
        end
    elseif v.payload_len ~= carried then
        bad(items.payload_len, pinfo, string.format(
            "DLCP payload length %d inconsistent with UDP length %d (%d payload bytes after the header)",
            v.payload_len, n + 8, carried))
    end
    if carried > 0 then
        tree:add(payload, tvb(HEADER_LEN)):set_text(string.format("Payload (%d bytes)", carried))
    end
    return n
end

DissectorTable.get("udp.port"):add(DLCP_PORT, dlcp)

-- Other ports (e.g. background traffic): the magic and version, as the switches check them.
local function heuristic(tvb, pinfo, tree)
    if tvb:len() < 3 or tvb(0, 2):uint() ~= MAGIC or tvb(2, 1):uint() ~= VERSION then
        return false
    end
    dlcp.dissector(tvb, pinfo, tree)
    return true
end
dlcp:register_heuristic("udp", heuristic)
