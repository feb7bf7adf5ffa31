"""The Wireshark dissector of the DLCP header (`wireshark/dlcp.lua`), generated from the
layout so that it cannot drift from it: field table, types, flags, ranges and the codec's
own error messages all come from `layout` and `header`.

    dlcp-emu wireshark --output wireshark/dlcp.lua     # regenerate (a test checks it is current)
    dlcp-emu wireshark --install                       # into your Wireshark's Lua plugins folder
    tshark -X lua_script:wireshark/dlcp.lua -r capture.pcap

The dissector registers on UDP port DLCP_UDP_PORT and as a heuristic on the magic and
version (how the switches recognise DLCP too). A header the codec would refuse is shown up
to the bad field and flagged with an expert item of group Malformed carrying the codec's
message, never decoded further as if it were valid.
"""
from __future__ import annotations

from string import Template

from dlcp_emu.wire.header import _RANGES
from dlcp_emu.wire.layout import (
    DLCP_UDP_PORT, HEADER_FIELDS, HEADER_LEN, MAGIC, MAX_PAYLOAD, TENSOR_LAYER_SHIFT, TENSOR_PHASE_SHIFT,
    TENSOR_PHASES, TENSOR_STEP_MASK, TOP_TRAFFIC_CLASS, TRAFFIC_CLASSES, VERSION,
    _FLAG_MASK, _TYPE_NAMES, Flags, PacketType,
)

PATH = "wireshark/dlcp.lua"      # in the repository, relative to its root

_PROTOFIELD = {"B": "uint8", "H": "uint16", "I": "uint32", "Q": "uint64"}
_SIZE = {"B": 1, "H": 2, "I": 4, "Q": 8}
_BASE = {"magic": "base.HEX", "flags": "base.HEX"}
_VALUES = {"type": "type_names", "priority": "priority_names", "mag_class": "mag_class_names",
           "tclass": "tclass_names"}


def priority_names() -> dict[int, str]:
    """Priority 0 is served first; the IP DSCP mirrors it as a class selector."""
    top = dict(_RANGES)["priority"]
    names = {p: f"DSCP CS{top - p}" for p in range(top + 1)}
    names[0] = f"highest, {names[0]}"
    names[top] = f"lowest, {names[top]}"
    return names


def mag_class_names() -> dict[int, str]:
    """Magnitude class 0 holds the smallest gradients: a DLCP switch drops it first."""
    top = dict(_RANGES)["mag_class"]
    names = {m: f"|g| class {m} of 0-{top}" for m in range(top + 1)}
    names[0] = "smallest |g|, dropped first"
    names[top] = "largest |g|, dropped last"
    return names


def _lua_table(d: dict[int, str]) -> str:
    return "{" + ", ".join(f'[{k}] = "{v}"' for k, v in sorted(d.items())) + "}"


def _field_lines() -> str:
    lines = []
    for f in HEADER_FIELDS:
        kind = _PROTOFIELD[f.code]
        base = _BASE.get(f.name, "base.DEC")
        values = _VALUES.get(f.name, "nil")
        lines.append(f'    {f.name} = ProtoField.{kind}("dlcp.{f.name}", "{f.label}", {base}, {values}),')
    return "\n".join(lines)


def _layout_lines() -> str:
    return "\n".join(f'    {{"{f.name}", {f.offset}, {_SIZE[f.code]}}},' for f in HEADER_FIELDS)


def _flag_lines() -> str:
    return "\n".join(
        f'    {{"{fl.name.lower()}", ProtoField.bool("dlcp.flags.{fl.name.lower()}", "{fl.name}", 8, nil, '
        f'0x{fl.value:02x}), 0x{fl.value:02x}}},' for fl in Flags)


def lua_dissector() -> str:
    """The whole Lua file."""
    top_prio, top_mag = dict(_RANGES)["priority"], dict(_RANGES)["mag_class"]
    return _TEMPLATE.substitute(
        port=DLCP_UDP_PORT, magic=f"0x{MAGIC:04X}", version=VERSION, header_len=HEADER_LEN,
        max_payload=MAX_PAYLOAD, layer_shift=TENSOR_LAYER_SHIFT, flag_mask=f"0x{_FLAG_MASK:02x}",
        trimmed=f"0x{Flags.TRIMMED.value:02x}", top_prio=top_prio, top_mag=top_mag,
        type_names=_lua_table({t.value: t.name for t in PacketType}), type_list=_TYPE_NAMES,
        priority_names=_lua_table(priority_names()),
        mag_class_names=_lua_table(mag_class_names()),
        tclass_names=_lua_table(dict(enumerate(TRAFFIC_CLASSES))), top_tclass=TOP_TRAFFIC_CLASS,
        fields=_field_lines(), layout=_layout_lines(), flags=_flag_lines(),
        layer_mask=f"0x{(0xFFFFFFFF >> TENSOR_LAYER_SHIFT) << TENSOR_LAYER_SHIFT:08X}",
        phase_mask=f"0x{1 << TENSOR_PHASE_SHIFT:08X}", phase_names=_lua_table(TENSOR_PHASES),
        step_mask=f"0x{TENSOR_STEP_MASK:08X}")


_TEMPLATE = Template('''\
-- Wireshark dissector for the DLCP header (DL-aware transport), Wireshark 4.0 or later.
--
-- GENERATED from dlcp_emu/wire/layout.py by `dlcp-emu wireshark --output wireshark/dlcp.lua`:
-- edit the layout or the generator (dlcp_emu/wire/wireshark.py), not this file.
--
-- Without installing:  tshark -X lua_script:wireshark/dlcp.lua -r capture.pcap
-- Installed:           dlcp-emu wireshark --install   (your Personal Lua Plugins folder)
-- Filters:             dlcp, dlcp.type == 0, dlcp.flags.droppable == 1, dlcp.tensor_id.phase == 1,
--                      dlcp.mag_class < 2, ... (a bare dlcp.flags.droppable matches every DLCP frame)

local DLCP_PORT = $port
local MAGIC = $magic
local VERSION = $version
local HEADER_LEN = $header_len
local MAX_PAYLOAD = $max_payload
local FLAG_MASK = $flag_mask
local TRIMMED = $trimmed
local TOP_PRIORITY = $top_prio
local TOP_MAG_CLASS = $top_mag
local TOP_TCLASS = $top_tclass

local type_names = $type_names
local priority_names = $priority_names
local mag_class_names = $mag_class_names
local tclass_names = $tclass_names

local dlcp = Proto("dlcp", "DL-aware transport (DLCP)")

-- One ProtoField per header field, in header order: {name, offset, size} below.
local f = {
$fields
}
local LAYOUT = {
$layout
}
local FLAGS = {
$flags
}
local tensor_layer = ProtoField.uint32("dlcp.tensor_id.layer", "Layer", base.DEC, nil, $layer_mask)
local tensor_phase = ProtoField.uint32("dlcp.tensor_id.phase", "Phase", base.DEC, $phase_names, $phase_mask)
local tensor_step = ProtoField.uint32("dlcp.tensor_id.step", "Step", base.DEC, nil, $step_mask)
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
        bad(items.type, pinfo, string.format("unknown DLCP packet type %d; known: $type_list", v.type))
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
''')
