"""The index's writes of one model, or one batch, in one round trip: Lua scripts.

Putting an entry changes its fleet-page row too (`worker.sinks.matrix`), and a row
moves between sorted sets by what its previous row was: a client that reads the
previous rows first (HMGET) and then writes (a pipeline) makes two round trips
per upload, and parses a reply for each of some forty commands (one APPEND per
trigram of a new row's field). On a loaded machine each round trip waits for
Redis to be scheduled: in a pool process profiled under bench/pipeline_throughput.py
the two took 15 of the 50 ms an upload spent beyond its S3 calls. Here Redis reads
the previous row itself, so a put is one EVALSHA with one reply, and a removal
another; the worker's CPU per upload went from 1.44x to 1.35x the bench's floor
(five alternating runs each).

The keys, values and set memberships written are exactly those of
`matrix.write_rows` and `matrix.remove_rows` over the rows read just before
(tests/sinks/test_index_write.py compares Redis dumps of both on real fixtures).
A script runs atomically, which is stronger than the pipeline it replaces: a
reader that sees an entry finds its parts and its row, and two writers of one
model can no longer leave a stale set member behind (a page still confirms each
member by its row, as it must for an index written before).

What a script cannot do is left to Python and passed in: rows are encoded here
(`matrix.encode_row`); a field's name id (BLAKE2b) and its trigrams (of the
Unicode lower-cased field: Lua's `lower` knows only ASCII) are sent with each
row, and used only when the row is new. The scripts also touch keys named inside
them (the status, cell and trigram sets), so they suit one Redis, as the index
does, and not a Redis Cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker.sinks import matrix

# KEYS: entries hash, parts hash, rows hash, keys set, names hash.
# ARGV: status prefix, cell prefix, gram prefix, the `serves` state, the number of
# parts, each part as (ref, blob); then per model: field, entry, row, name id, the
# number of its trigrams and the trigrams.
PUT = """
local entries, parts, rows, keys, names = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local status, cell, gram, serves = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local function sets_of(blob)
  local row = cjson.decode(blob)
  local found = {[status .. row[6]] = true}
  for consumer, c in pairs(row[7]) do
    if c[1] ~= serves then found[cell .. consumer .. ':' .. c[1]] = true end
  end
  return found
end
local i = 6
for _ = 1, tonumber(ARGV[5]) do
  redis.call('HSET', parts, ARGV[i], ARGV[i + 1])
  i = i + 2
end
local written = 0
while i <= #ARGV do
  local field, entry, row, id = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local grams = tonumber(ARGV[i + 4])
  redis.call('HSET', entries, field, entry)
  local old = redis.call('HGET', rows, field)
  local before = {}
  if old then
    before = sets_of(old)
  else
    redis.call('ZADD', keys, 0, field)
    redis.call('HSET', names, id, field)
    for g = i + 5, i + 4 + grams do redis.call('APPEND', gram .. ARGV[g], id) end
  end
  local after = sets_of(row)
  for set in pairs(before) do
    if not after[set] then redis.call('ZREM', set, field) end
  end
  for set in pairs(after) do
    if not before[set] then redis.call('ZADD', set, 0, field) end
  end
  redis.call('HSET', rows, field, row)
  written = written + 1
  i = i + 5 + grams
end
return written
"""

# KEYS: entries hash, rows hash, keys set, names hash.
# ARGV: status prefix, cell prefix, the `serves` state, the field, its name id.
REMOVE = """
local entries, rows, keys, names = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local status, cell, serves, field, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
redis.call('HDEL', entries, field)
local old = redis.call('HGET', rows, field)
if not old then return 0 end
local row = cjson.decode(old)
redis.call('HDEL', rows, field)
redis.call('ZREM', keys, field)
redis.call('HDEL', names, id)
redis.call('ZREM', status .. row[6], field)
for consumer, c in pairs(row[7]) do
  if c[1] ~= serves then redis.call('ZREM', cell .. consumer .. ':' .. c[1], field) end
end
return 1
"""


class IndexWriter:
    """The two scripts, registered once per client (redis-py sends each by its SHA1
    and loads it again if Redis has forgotten it: a restart, `SCRIPT FLUSH`)."""

    def __init__(self, client: Any, entries: str, parts: str) -> None:
        self._entries, self._parts = entries, parts
        self._put = client.register_script(PUT)
        self._remove = client.register_script(REMOVE)

    def put(self, parts: Mapping[str, bytes], models: Sequence[tuple[bytes, matrix.Row]]) -> int:
        """Store `parts`, then each (entry, row): the entry under its row's field, the row,
        and the row's place in the sets. The number of models written."""
        args: list[Any] = [matrix.STATUS, matrix.CELL, matrix.GRAM, matrix.SERVES, len(parts)]
        for ref, blob in parts.items():
            args += (ref, blob)
        for entry, row in models:
            name = row.field
            grams = matrix.grams(name.lower())
            args += (name, entry, matrix.encode_row(row), matrix.name_id(name), len(grams))
            args += grams
        keys = [self._entries, self._parts, matrix.ROWS, matrix.KEYS, matrix.NAMES]
        return int(self._put(keys=keys, args=args))

    def remove(self, field: str) -> bool:
        """Drop the entry of `field`, its row and its place in the sets; whether it had
        a row."""
        keys = [self._entries, matrix.ROWS, matrix.KEYS, matrix.NAMES]
        args = [matrix.STATUS, matrix.CELL, matrix.SERVES, field, matrix.name_id(field)]
        return bool(self._remove(keys=keys, args=args))
