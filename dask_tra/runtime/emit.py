"""IA plan -> Dask graph: one HighLevelGraph layer per plan stage, every task pinned to its site.

A task exists for each chunk a site computes (an input block, a local join or map, a local
aggregation of several chunks). Nothing else is a task:

- a move (Broadcast, Shuffle) is a dependency: the consumer pinned at the destination reads
  the origin's key, and dask moves it there once per worker (the bytes the plan predicts);
- a persisted input (futures, scattered blocks) or a lazy dask.array block is read by its key;
- on one site with no pins (the local schedulers' plan), a block already in memory (a view of
  the user's array, a gather's pieces) is an argument of the tasks reading it (``_Value``);
- pure re-labelling (ReKey, insertDim, filters, one-member aggregation) reads the origin's key;
- a task whose chunk is read once, by a task on the same site, is fused into that task (a
  chain of local maps and joins becomes one task, as dask fuses blockwise chains; a block
  that is free to make is made inside its consumer, the members run as flat steps: see
  ``_program``), unless it fetches from another site and its reader waits for another task
  (``_Tasks.fused``); a local join read only by a local
  fold is folded pairwise as it is made (``_join_fold``), keeping one product in memory at a
  time.
- a fold reads a bounded group (``optimizer/memory.py``: ``FOLD_BYTES``): a group whose operands
  (with what an inlined member's task reads) exceed it is folded as a tree, as dask's
  ``split_every``: leaf tasks of ``fold_pairs`` operand pairs (a contraction) or of as many
  members as fit, then their partial results ``fold_width`` at a time; members too large for two
  to fit stay tasks of their own. The tree's tasks run on the group's site: no move changes.

Block products take turns between the sites that read them (``turns``, the ``priority``
annotation): each site makes the first product bound for every reading site, then the
second, and so on, in the readers' order, so partial sums start moving while products are
still being made and every site receives its share throughout.

The replicas the moves leave are the plan's: dask's active memory manager would drop those
whose pinned readers are still waiting (see ``amm.py``, installed with the plan's client).

Task names read on the dashboard (``task_name``): ``<operation>[-<stage>]-<token>-<step>``,
the user's operation and the stage, in letters and hyphens, so dask's ``key_split`` (what the
dashboard groups by) gives ``random_uniform``, ``matmul``, ``sum-partial``, ``sum-aggregate``,
``mean-aggregate``, ``matmul-sum-partial`` (a product fused into the sum that reads it); at most
``MAX_PREFIX`` characters, as the Progress panel shows them. A fused task is named after what
it computes (``Naming.fused``), not only its consumer. The result blocks keep the collection's
name. ``is_plan_name`` recognises these names (``diagnostics.measure`` counts their moves as
the plan's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from dask._task_spec import GraphNode, convert_legacy_task
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.task_spec import Alias, DataNode, Task, TaskRef

from ..ia.nodes import Broadcast, IANode, LocalAggregate, LocalFilter, LocalJoin, LocalMap, Placed, Shuffle
from ..optimizer import memory as mem
from ..tra.dag import Registry, walk_many
from ..tra.expr import Concat
from ..tra.tasks import Data
from .ownership import Pins, mark
from .sources import Ref, is_future

# per IA operator, what emission makes of it (a Placed input's block and a move are the
# emitter's own: a source's task, a dependency):
# its tasks: (node, key, site, origin, avail, dask key) -> (task, keys it reads), None for a relabel
TASK = Registry("emit", "task", "@TASK.register({}) in runtime/emit.py")
# its dashboard words: (naming, node, partial, fused, products) -> Step
STEP = Registry("emit", "task name", "@STEP.register({}) in runtime/emit.py")


def _alpha(label: str) -> str:
    """A dashboard stage label: the letters of a display name, hyphenated (``"multiply[·,2]"`` ->
    ``"multiply"``). Only a label: nothing reads an operation back from it."""
    words = "".join(c if "a" <= c <= "z" else " " for c in label.lower()).split()
    return "-".join(words) or "op"


MAX_PREFIX = 20  # the dashboard's Progress panel cuts task prefixes after 20 characters
_PLUMBING = {"rekey", "filter", "tile", "reshape", "squeeze", "expand_dims"}  # move no values
_PLAN_NAME = re.compile(r"[a-z][a-z_]*(-[a-z]+)*-[0-9a-f]{16}-[0-9]+")


def is_plan_name(name) -> bool:
    """Whether a key name is one ``emit`` gives a plan's task (``<words>-<token>-<step>``)."""
    return isinstance(name, str) and _PLAN_NAME.fullmatch(name) is not None


def _word(label: str) -> str:
    """An operation's word: the leading letters and underscores of a kernel or input name
    (``"einsum[abc,a->bc]"`` -> ``"einsum"``, ``"random-uniform-7b2…"`` -> ``"random_uniform"``)."""
    label = label.lower()
    if "-" in label and "[" not in label:  # an input's name: its words before the token
        words = []
        for w in label.split("-"):
            if not w.isalpha():
                break
            words.append(w)
        label = "_".join(words)
    m = re.match(r"[a-z_]*", label)
    return (m.group(0).strip("_") if m else "") or "op"


def _map_word(label: str) -> str:
    """A per-block map's word; a fused chain (``"reshape∘mean[0]"``, outermost first) is named by
    its outermost operation that computes something."""
    words = [_word(part) for part in label.split("∘")]
    return next((w for w in words if w not in _PLUMBING), words[0])


@dataclass(frozen=True)
class Step:
    """What one IA node's tasks do, in the dashboard's words: ``word`` (the operation),
    ``stage`` ("partial": per block before a sum across blocks, "aggregate": that sum), and
    ``role``: "input", "products" (block products), "join", "map", "aggregate", "plumbing"
    (relabels or reshapes; named after what it reshapes)."""

    word: str
    stage: str = ""
    role: str = "map"

    def name(self) -> str:
        return task_name((self,))


def task_name(steps) -> str:
    """The name prefix of a task computing ``steps`` (inner first, its own last): the last
    operation that computes something, with its stage (or the stage it finishes: a map right
    after an aggregation is its end, ``mean-aggregate``), preceded by the block products fused
    into it (``matmul-sum-partial``). Inputs and relabels count only when alone."""
    return _task_name(tuple(steps))


@lru_cache(maxsize=4096)  # a plan names its tasks from a few steps, again and again
def _task_name(steps: tuple) -> str:
    real = [s for s in steps if s.role not in ("input", "plumbing")]
    if not real:
        real = [s for s in steps if s.role == "input"] or list(steps)
    last = real[-1]
    stage = last.stage
    if not stage and last.role == "map" and len(real) > 1 and real[-2].role == "aggregate":
        stage = real[-2].stage
    words = [last.word]
    prod = next((s.word for s in real if s.role == "products"), None)
    if prod is not None and prod != last.word:
        words.insert(0, prod)
    tail = [stage] if stage else []
    while len("-".join(words + tail)) > MAX_PREFIX and len(words) > 1:
        words.pop(0)
    if len(words) == 1:  # one word still too long: cut it
        words = [words[0][: MAX_PREFIX - len("-".join(tail)) - len(tail)].rstrip("_") or "op"]
    return "-".join(words + tail)


class Naming:
    """Each IA node's ``Step`` and the task names of a graph, before and after fusion."""

    def __init__(self, walk, fused, products):
        feeds = _feeds_aggregate(walk)
        self.steps: dict = {}
        for n in walk:  # children first
            partial = "partial" if n.uid in feeds else ""
            self.steps[n.uid] = STEP(n)(self, n, partial, fused, products)

    def _below(self, n) -> Step:
        """The step of what ``n`` reads, through moves and relabels."""
        while isinstance(n, (Broadcast, Shuffle, LocalFilter)):
            n = n.children[0]
        return self.steps.get(n.uid, Step("op"))

    def fused(self, tasks, members, names, exposed) -> dict:
        """{old key: new key} for the tasks whose fused members name them otherwise than their
        own node (``members``: task -> the keys computed inside it, its own last)."""
        out = {}
        for dk in tasks:
            if dk in exposed or len(members.get(dk, ())) < 2:
                continue
            word = task_name([names[k[0]] for k in members[dk]])
            old = dk[0]
            new = word + old[len(names[old].name()) :]
            if new != old:
                out[dk] = (new,) + tuple(dk[1:])
        return out


def _feeds_aggregate(walk) -> set:
    """The uids of the nodes whose tuples are summed across blocks next (through moves and
    relabels): one pass, readers before what they read."""
    feeds: set = set()
    for n in reversed(walk):
        passes = isinstance(n, (Broadcast, Shuffle, LocalFilter)) or (
            isinstance(n, LocalMap) and _map_word(n.op.label) in _PLUMBING
        )
        sums = isinstance(n, LocalAggregate) and not isinstance(n.op, Concat)
        if sums or (passes and n.uid in feeds):
            feeds.update(c.uid for c in n.children)
    return feeds


@STEP.register(IANode)
def _plumbing_step(naming, n, partial, fused, products) -> Step:
    return Step(_alpha(n.kind).replace("-", "_"), partial, "plumbing")


@STEP.register(Placed)
def _input_step(naming, n, partial, fused, products) -> Step:
    return Step(_word(n.input.name), role="input")


@STEP.register(LocalJoin)
def _join_step(naming, n, partial, fused, products) -> Step:
    return Step(_word(n.op.kernel.name), partial, "products" if products.get(n.uid) else "join")


@STEP.register(LocalAggregate)
def _aggregate_step(naming, n, partial, fused, products) -> Step:
    if isinstance(n.op, Concat):
        return Step("concat", partial, "map")
    below = naming._below(n.children[0])
    if n.uid in fused.values():  # a fold of the block products made in the same task
        return Step(below.word, partial, "products")
    return Step(below.word, "partial" if partial else "aggregate", "aggregate")


@STEP.register(LocalMap)
def _map_step(naming, n, partial, fused, products) -> Step:
    word = _map_word(n.op.label)
    if word in _PLUMBING:
        below = naming._below(n.child)
        return Step(below.word, below.stage, "plumbing")
    return Step(word, partial, "map")


def emit(roots, sources: dict, workers, token: str, output_names):
    """Build one graph computing every IA plan of ``roots`` (sharing what they share), the
    blocks of ``roots[i]`` under the keys ``(output_names[i], *key)``. ``workers[site]`` is the
    address pinning site's tasks (None: no pins).

    Returns (HighLevelGraph, per root its output key per relation key, the input keys whose
    moves are the plan's, ``Moves``: what the graph sends between sites). A lazy dask.array block is made where the
    plan first reads it; a second site makes it again when only source data lies behind it,
    and otherwise fetches it, a move the plan did not predict: such a block's moves are left to
    ``measure().other_bytes``.

    The bytes moved are counted on the graph itself (``Moves``): a copy the plan moves to a
    site where no task reads it is never sent, so it is not counted.
    """
    external = {}
    for src in sources.values():
        if src.graph:
            external.update(src.graph)
    ext_pins: dict[Any, int] = {}  # referenced external keys (lazy dask.array blocks) -> the site that reads them
    g = _Tasks()
    avail = _Avail()  # (origin, site) -> dask key holding that chunk on that site
    made: dict[tuple, Any] = {}  # (input name, key, site) -> dask key of an input block made there, read there only
    reads, fetched = set(), set()  # input keys read by key; lazy blocks fetched by a second site
    home: dict[Any, set[int]] = {}  # input key read by key -> the sites holding it
    nbytes = ChunkBytes()  # dask key -> bytes of its chunk
    light = set()  # dask keys of constant inputs' chunks (views of one value)
    walk = walk_many(roots)
    local = workers is None and all(r.s == 1 for r in roots)  # one site, no pins: nothing moves
    # the plan counts a moved block's bytes per origin: a block it moves keeps its own key, so
    # dask moves it exactly as often as predicted
    moved = {o for n in walk if isinstance(n, (Broadcast, Shuffle)) for cs in n.copies.values() for _, o in cs}
    fused = _fusable_joins(walk)
    products = {n.uid: n.op.kernel.makes_products(n.left.type, n.right.type) for n in walk if isinstance(n, LocalJoin)}
    direct: dict[int, str] = {}  # id(root) -> output name, for a root made once per key: its tasks are the outputs
    for root, output_name in zip(roots, output_names):
        if len(root.copies) == sum(len(cs) for cs in root.copies.values()):
            direct.setdefault(id(root), output_name)
    naming = Naming(walk, fused, products)

    def place(node, key, site, origin, dk, spec):
        """The dask key holding input ``node``'s block ``key`` on ``site``, its task made now."""
        block = (node.input.name, tuple(key), site)
        if block in made and origin not in moved:  # placed twice (two layouts): made once
            return made[block]
        g.add(dk, _input_task(dk, spec), [], site)
        if getattr(node.input, "constant", False):
            light.add(dk)  # a view of one value: it holds no memory of its own
        if origin not in moved:
            made[block] = dk
        nbytes.at[dk] = (node.type, key)
        return dk

    names = {}  # task name -> its node's ``Step``
    folding = set(fused.values())  # the aggregations folding a join's products as they are made
    for step, node in enumerate(walk):  # a node's place in the plan, not its uid: equal plans, equal keys
        if node.uid in fused:
            continue  # computed inside the local aggregation that consumes it
        what = naming.steps[node.uid]
        task = TASK.get(type(node))  # None for an input or a move (or a node with no task: below)
        name = plan_name = f"{what.name()}-{token}-{step}"
        names[name] = what
        output_name = direct.get(id(node))
        if output_name is not None:
            name = output_name  # the collection's layer (``__dask_layers__``) holds its output keys
        move, placed = isinstance(node, (Broadcast, Shuffle)), isinstance(node, Placed)
        folds_join, folds = node.uid in folding, isinstance(node, LocalAggregate) and not isinstance(node.op, Concat)
        for key, copies in node.copies.items():
            for site, origin in copies:
                where = (origin, site)
                if where in avail or where in avail.later:
                    continue
                if move:  # a dependency, not a task
                    avail.later[where] = partial(avail.__getitem__, (origin, origin[2]))
                    continue
                dk = (name,) + tuple(key) if output_name is not None else (name,) + tuple(key) + (site,)
                if placed:
                    spec = sources[node.input.name].task(key)
                    if local and type(spec) is Data:  # an argument of the tasks reading it (``_Value``)
                        avail[where] = value = _Value(spec.value)
                        nbytes.at[value] = (node.type, key)  # what a fold holds to read it (``_footprint``)
                        if getattr(node.input, "constant", False):
                            light.add(value)
                        continue
                    if not isinstance(spec, Ref):  # made when first read: a block no task reads is never made
                        avail.later[where] = partial(place, node, key, site, origin, dk, spec)
                        continue
                    # read by its key (pinned, in plan order, where the plan places it first)
                    avail[where] = spec.key
                    reads.add(spec.key)
                    home.setdefault(spec.key, set()).add(site)
                    nbytes.at[spec.key] = (node.type, key)
                    if (
                        spec.key in external
                        and not is_future(external[spec.key])
                        and ext_pins.setdefault(spec.key, site) != site
                    ):
                        remade = _remade_here(Alias(dk, spec.key), external)
                        if not isinstance(remade, Alias):  # its own task again, on this site
                            g.add(dk, remade, [], site)
                            avail[where] = dk
                            # its bytes: a move from this site (a 3-D split's broadcast) sends it on
                            nbytes.at[dk] = (node.type, key)
                        else:
                            fetched.add(spec.key)
                    continue
                # a fold tree's inner tasks are (plan_name, *key, site, level, i)
                if folds_join:
                    work = products[node.child.uid]
                    _join_fold_tree(g, dk, node, key, site, avail, nbytes, light, work, (plan_name, *key, site))
                elif folds and len(node.members[(key, site)]) > 1:
                    _fold_tree(g, dk, node, key, site, avail, nbytes, light, (plan_name, *key, site))
                else:
                    built = (task or TASK(node))(node, key, site, origin, avail, dk)
                    if built is None:  # a pure relabel: the origin's key already holds it here
                        continue
                    spec, refs = built
                    g.add(dk, spec, refs, site, products.get(node.uid, False))
                avail[where] = dk
                nbytes.at[dk] = (node.type, key)
    out_keys: list[dict] = []
    for root, output_name in zip(roots, output_names):
        out_keys.append({})
        for key, copies in root.copies.items():
            site, origin = copies[0]
            ok = (output_name,) + tuple(key)
            out_keys[-1][key] = ok
            src = avail[(origin, site)]
            if type(src) is _Value:  # an in-memory block, output as it is
                g.add(ok, DataNode(ok, src.value), [], site)
            elif src != ok:  # made earlier, sits on several sites, or is another output
                g.add(ok, Alias(ok, src), [src], site)
            g.exposed.add(ok)
    read_live = g.cull()
    reads = {r for r in reads if r in read_live}
    moves = Moves(g.reads, dict(g.site), home, nbytes, reads - fetched, ext_pins)
    held = {k: {s} for k, s in ext_pins.items()}  # a lazy block is made where first read
    held.update(home)
    tasks = g.fused(held, lambda survivors, members: naming.fused(survivors, members, names, g.exposed))
    priority = turns(tasks, g.site, g.heavy) if workers is not None else None  # no pins, no workers to order
    graph = _graph(tasks, g.site, external, ext_pins, f"external-{token}", workers, priority)
    return graph, out_keys, reads - fetched, moves


def turns(tasks, site, heavy) -> dict:
    """{task: priority} for the tasks computing block products (``heavy``): on each site, those
    read on one site are ranked in their readers' order, and rank r gets priority -r (dask runs
    higher first; other tasks keep 0). Each site so makes the first product for every reading
    site, then the second, ... A sum over sites waits for its partials from every site, and all
    sites rank its partials alike: sums become ready one by one while products are still made,
    instead of one site's sums at the end of everybody's work, and their moves overlap the
    compute."""
    order = {dk: i for i, dk in enumerate(tasks)}
    reader: dict = {}
    for dk, spec in tasks.items():
        for d in spec.dependencies:
            if d in heavy:
                reader.setdefault(d, dk)
    groups: dict = {}
    for dk in heavy:
        r = reader.get(dk, dk)
        groups.setdefault((site[dk], site[r]), []).append((order[r], order[dk], dk))
    out = {}
    for members in groups.values():
        members.sort()
        for rank, (_, _, dk) in enumerate(members):
            out[dk] = -rank
    return out


class ChunkBytes:
    """dask key -> bytes of its chunk, from the (relation type, key) recorded per task and
    computed when first read: a local plan moves nothing, and reads only a fold's members."""

    def __init__(self):
        self.at: dict = {}
        self._known: dict = {}

    def get(self, dk, default=0) -> int:
        found = self._known.get(dk)
        if found is None:
            where = self.at.get(dk)
            if where is None:
                return default
            found = self._known[dk] = _chunk_bytes(*where)
        return found


def _chunk_bytes(t, key) -> int:
    """Bytes of the chunk at ``key``: read from the type's elements per key where planning
    made them (kept with the type), else from the chunk's shape (made for a few keys, that
    table would cost more than it saves)."""
    elements = t._cache.get("key_elements")
    if elements is not None:
        i = 0
        for k, f in zip(key, t.frontier):
            i = i * f + k
        return int(elements[i]) * t.dtype.itemsize
    n = 1
    for e in t.chunk_shape(key):
        n *= int(e)
    return n * t.dtype.itemsize


class Moves:
    """What the emitted graph sends between sites, counted on the graph itself: a copy the plan
    moves to a site where no task reads it is never sent (dask culls what the outputs do not
    need), so the plan's estimate can be above what runs."""

    def __init__(self, reads, site, home, nbytes, plan_reads, ext_pins):
        self.reads, self.site, self.home, self.nbytes = reads, site, home, nbytes
        self.plan_reads, self.ext_pins = plan_reads, ext_pins

    def bytes(self, outputs) -> int:
        """Bytes sent for the tasks ``outputs`` need: a key read by a task on a site that does
        not hold it goes there once. Fusion does not change this (it inlines only a task read
        by one task on its own site). A lazy dask.array block fetched by a second site is not a
        plan's move (``measure().other_bytes``)."""
        sites = set(self.site.values()).union(*self.home.values(), self.ext_pins.values())
        if len(sites) <= 1:  # every task and every block on one site: nothing is sent
            return 0
        live, stack = set(), list(outputs)
        while stack:
            k = stack.pop()
            if k not in live:
                live.add(k)
                stack.extend(self.reads.get(k, ()))
        sent = set()
        for dk in live:
            site = self.site.get(dk)
            for r in self.reads.get(dk, ()):
                if r in self.ext_pins:
                    where = {self.ext_pins[r]} if r in self.plan_reads else {site}
                elif r in self.home:
                    where = self.home[r]
                elif r in self.site:
                    where = {self.site[r]}
                else:
                    continue
                if site not in where:
                    sent.add((r, site))
        return sum(self.nbytes.get(r, 0) for r, _ in sent)


class _Avail(dict):
    """(origin, site) -> the dask key holding that chunk on that site. An entry may wait in
    ``later`` until first read (an input block's task, a move, a relabel): what no task reads is
    never made."""

    def __init__(self) -> None:
        super().__init__()
        self.later: dict[tuple, Callable[[], Any]] = {}

    def __missing__(self, where: tuple) -> Any:
        made = self[where] = self.later.pop(where)()
        return made


MAX_DEPTH = 32  # steps per fused task (a member that is not a plain call nests; nests run and pickle recursively)


class _Tasks:
    """The plan's tasks in creation order (inputs before readers), with what fusion needs:
    each task's site, the keys it reads (with repeats), the keys that must stay keys, and the
    tasks that compute block products (``work``: more flops than a pass over their inputs)."""

    def __init__(self):
        self.spec, self.site, self.reads = {}, {}, {}
        self.exposed = set()  # the outputs: they stay keys
        self.keep: set = set()  # tasks never inlined into their reader (a fold tree's inner tasks)
        self.work = set()
        self.heavy: set = set()  # after ``fused``: the tasks computing block products
        self.members: dict = {}  # after ``fused``: task -> the tasks inlined into it, itself last
        self._inside: set = set()  # after ``fused``: the tasks inlined into a reader

    def add(self, dk, spec, refs, site, work=False):
        self.spec[dk], self.reads[dk], self.site[dk] = spec, list(refs), site
        if work:
            self.work.add(dk)

    def cull(self) -> set:
        """Drop the tasks no output needs (a slice's plan places whole inputs; dask would cull
        them, after ordering them); returns every key the remaining tasks read."""
        spec, reads = self.spec, self.reads
        live, stack = set(), list(self.exposed)
        while stack:
            dk = stack.pop()
            if dk not in live:
                live.add(dk)
                stack += reads.get(dk, ())  # keys that are no task (inputs read by key) are live too
        for dk in [dk for dk in spec if dk not in live]:
            del spec[dk], reads[dk], self.site[dk]
            self.work.discard(dk)
            self.keep.discard(dk)
        return set().union(*reads.values())

    def _delays(self, o, site, late) -> bool:
        return o in self.spec and (self.site[o] != site or late[o])

    def _inlined(self, reads, site, inline, depth, work, fetches, waits, late, pending) -> list:
        """The readers' inputs inlined into a task on ``site`` (see ``fused``), taken from ``pending``."""
        cands = [
            r
            for r in reads
            if r in pending
            and depth[r] < MAX_DEPTH
            and not (work[r] and any(self._delays(o, site, late) for o in reads if o != r))
        ]
        quiet = {r for r in cands if not fetches[r]}
        for r in cands:
            if r not in quiet and all(o == r or o in quiet and not waits[o] or o not in self.spec for o in reads):
                quiet.add(r)
        subs = [r for r in cands if r in quiet]
        pending.difference_update(subs)
        return subs

    def fused(self, held=None, naming=None) -> dict:
        """Every task, with each task read once by a task on its site inlined into that reader.

        Dask sends a task to its worker only once every input exists, so what is inlined into a
        reader waits for all the reader's inputs. Hence block products are not inlined into a
        reader that also waits for a task made on another site (or for one that waits so,
        *late*): they would wait for the other site's work (a merge fused with the merging
        site's own share left that site idle until the others were done, then computed the
        share). A map over a block is still inlined: as a task of its own it would cost more
        than its wait. And a task that
        fetches a chunk from another site (``held``: external key -> the sites holding it) is
        not inlined into a reader that also waits for another task: the fetch would start only
        once that task is made.

        ``naming(tasks, members)``: {old key: new key} for the fused tasks (``Naming.fused``),
        their keys and their readers' references renamed as the tasks are built (once each)."""
        inlined = self._inlining(held or {})
        survivors = [dk for dk in inlined if dk not in self._inside]
        rename = naming(survivors, self.members) if naming is not None else {}
        programs, nested = {}, set()
        for dk in survivors:
            if inlined[dk]:
                program = _program(self.spec, self.members[dk], rename.get(dk, dk), rename)
                if program is None:  # built as nested tasks
                    nested.update(self.members[dk])
                else:
                    programs[dk] = program
        built: dict[Any, Any] = {}
        for dk, subs in inlined.items():  # creation order: what a task inlines is built before it
            if dk in programs:
                built[dk] = programs[dk]
                continue
            if dk in self._inside and dk not in nested:
                continue
            spec, key = self.spec[dk], rename.get(dk, dk)
            if type(spec) is _Call:  # dask's Task, made now
                if not subs:
                    built[dk] = spec.task(key, rename)
                    continue
                spec = spec.task(dk, {})
            if isinstance(spec, Alias) and subs:  # an output that is a chunk made for it alone
                spec = _rekey(built.pop(subs[0]), key)
            elif subs or key != dk or not spec.dependencies.isdisjoint(rename):
                spec = _substituted(spec, {r: built.pop(r) for r in subs}, rename, key)
            built[dk] = spec
        if rename:
            self.site = {rename.get(k, k): v for k, v in self.site.items()}
            self.heavy = {rename.get(k, k) for k in self.heavy}
        return {rename.get(dk, dk): spec for dk, spec in built.items()}

    def _inlining(self, held) -> dict:
        """{task: the tasks read once on its site inlined into it}, every task in creation order
        (``fused``); sets ``members``, ``heavy`` and ``_inside`` (the tasks inlined) and drops
        those from ``site``."""
        count: dict[Any, int] = {}
        reader: dict[Any, Any] = {}
        for dk, refs in self.reads.items():
            for r in refs:
                count[r] = count.get(r, 0) + 1
                reader[r] = dk
        inline = {
            dk
            for dk in self.spec
            if count.get(dk) == 1
            and dk not in self.exposed
            and dk not in self.keep
            and self.site[reader[dk]] == self.site[dk]
        }
        pending: set = set()  # made, and not yet inlined into a reader
        out: dict[Any, list] = {}
        depth: dict[Any, int] = {}
        self.members = {}  # task -> the tasks computed inside it, in order, itself last
        fetches: dict[Any, Any] = {}  # per task as emitted: reads a chunk on
        waits: dict[Any, Any] = {}
        late: dict[Any, Any] = {}
        work: dict[Any, Any] = {}
        # another site; reads a task; reads a task made on another site or a late one; has products
        sites = set(self.site.values())
        one_site = len(sites) <= 1 and all(h <= sites for h in held.values())  # nothing is fetched or waits
        for dk in self.spec:
            site, reads = self.site[dk], self.reads[dk]
            if one_site:
                subs = [r for r in reads if r in pending and depth[r] < MAX_DEPTH]
                pending.difference_update(subs)
            else:
                subs = self._inlined(reads, site, inline, depth, work, fetches, waits, late, pending)
            inner, deepest, busy = [], 0, dk in self.work
            for r in subs:  # a loop, not generators: this runs once per tuple the plan computes
                inner += self.members.pop(r)
                deepest = max(deepest, depth[r])
                busy = busy or work[r]
            inner.append(dk)
            self.members[dk], depth[dk], work[dk] = inner, deepest + 1, busy
            if not one_site:
                own = [r for r in reads if r not in subs]
                fetches[dk] = any(fetches[r] for r in subs) or any(
                    site not in ({self.site[r]} if r in self.site else held.get(r, {site})) for r in own
                )
                waits[dk] = any(waits[r] for r in subs) or any(r in self.spec for r in own)
                late[dk] = any(late[r] for r in subs) or any(self._delays(r, site, late) for r in own)
            out[dk] = subs
            if dk in inline:
                pending.add(dk)
        self._inside = {r for subs in out.values() for r in subs}
        for dk in self._inside:
            del self.site[dk]
        self.heavy = {dk for dk in out if work[dk] and dk not in self._inside}
        return out


class _Call:
    """A task as ``emit`` first makes it: ``func(*args)``, a ``TaskRef`` argument reading that
    key. Fusion makes dask's ``Task`` once per task left in the graph (``_Tasks.fused``): a task
    inlined into its reader is a step of the reader's (``_program``), never a ``Task`` itself."""

    __slots__ = ("func", "args")

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def task(self, key, rename) -> Task:
        """dask's ``Task`` under ``key``, its inputs renamed by ``rename``."""
        return Task(key, self.func, *(_input(a, {}, rename) if type(a) is TaskRef else a for a in self.args))


class _Step:
    """An argument of a step of a fused task (``_program``): the task's ``i``-th input, or, with
    ``made``, the result of its ``i``-th step (read once: it is dropped when read)."""

    __slots__ = ("i", "made")

    def __init__(self, i: int, made: bool):
        self.i, self.made = i, made

    def __reduce__(self):
        return _Step, (self.i, self.made)


def _program(specs, members, key, rename):
    """One task computing ``members`` (a fused task's tasks, inputs first, itself last) as flat
    steps (``_run_steps``): no nested task is built, and each step's result is dropped once read.
    None when a member is not a plain call of chunks (a nested or keyword argument: a wrapped
    dask.array block's own task): the task is then built nested."""
    if type(specs[members[-1]]) is Alias:
        members = members[:-1]  # an output aliasing its one member: that member, under the output's key
    step_of = {m: j for j, m in enumerate(members)}
    inputs: list = []
    slot: dict = {}
    steps: list[tuple[Any, tuple]] = []
    for m in members:
        spec = specs[m]
        if type(spec) is DataNode:
            steps.append((_value, (spec.value,)))
            continue
        if not (type(spec) is _Call or type(spec) is Task and not spec.kwargs):
            return None
        args = []
        for a in spec.args:
            if type(a) is TaskRef:
                j = step_of.get(a.key)
                if j is None:
                    j = slot.get(a.key)
                    if j is None:
                        j = slot[a.key] = len(inputs)
                        inputs.append(TaskRef(rename.get(a.key, a.key)))
                    args.append(_Step(j, False))
                else:
                    args.append(_Step(j, True))
            elif isinstance(a, GraphNode):
                return None
            else:
                args.append(a)
        steps.append((spec.func, tuple(args)))
    return Task(key, _run_steps, tuple(steps), *inputs)


def _run_steps(steps, *inputs):
    """A fused task's steps in order (``_program``); the last one's result."""
    made: dict[int, Any] = {}
    for j, (func, args) in enumerate(steps):
        made[j] = func(*[(made.pop(a.i) if a.made else inputs[a.i]) if type(a) is _Step else a for a in args])
    return made[len(steps) - 1]


def _value(v):
    return v


def _substituted(spec, subs, rename, key=None):
    """``spec`` with the tasks ``subs`` ({key: task}) inlined, its other inputs renamed by
    ``rename`` and its key ``key`` (if given): built at once where the task reads its inputs as
    arguments of its own (every task ``emit`` makes but a fold tree's)."""
    args = spec.args if type(spec) is Task and not spec.kwargs else None
    if args is not None and not any(isinstance(a, GraphNode) for a in args):  # its inputs: TaskRefs alone
        return Task(
            key or spec.key,
            spec.func,
            *(_input(a, subs, rename) if type(a) is TaskRef else a for a in args),
        )
    return spec.substitute({**{d: rename[d] for d in spec.dependencies if d in rename}, **subs}, key=key)


def _input(ref, subs, rename):
    found = subs.get(ref.key)
    if found is not None:
        return found
    new = rename.get(ref.key)
    return ref if new is None else TaskRef(new)


def _rekey(spec, key):
    if isinstance(spec, DataNode):
        return DataNode(key, spec.value)
    return spec.substitute({}, key=key)


def _graph(tasks, site, external, ext_pins, ext_name, workers, priority=None):
    """HighLevelGraph with exact layer dependencies, per-task worker pins and ``priority``
    (task -> priority, others 0) (a layer per stage: a task's key starts with its layer's name).

    Of a wrapped dask.array's graph, the blocks the plan reads are pinned where it reads
    them (so they are made there); the tasks behind them are left to the scheduler.
    """
    layers: dict[str, dict] = {}
    for dk, spec in tasks.items():
        layers.setdefault(dk[0], {})[dk] = spec
    hl: dict[str, Any] = {}
    deps: dict[str, Any] = {}
    if external:
        annotations = None
        if workers is not None and ext_pins:
            annotations = mark(
                {
                    "workers": Pins({k: [workers[s]] for k, s in ext_pins.items()}),
                    "allow_other_workers": Pins({k: k not in ext_pins for k in external}),
                }
            )
        hl[ext_name] = MaterializedLayer(dict(external), annotations=annotations)
        deps[ext_name] = set()
    for name, layer in layers.items():
        annotations = None
        if workers is not None:
            annotations = mark(
                {"workers": Pins({k: [workers[site[k]]] for k in layer}), "allow_other_workers": False}
            )  # strict: loose pins get stolen (see faults.py)
            if priority and any(k in priority for k in layer):
                annotations["priority"] = Pins(priority, 0)
        hl[name] = MaterializedLayer(layer, annotations=annotations)
        deps[name] = {
            d[0] if d in tasks else ext_name
            for t in layer.values()
            for d in t.dependencies
            if d in tasks or d in external
        } - {name}
    return HighLevelGraph(hl, deps)


def _remade_here(alias, external):
    """A lazy dask.array block read on a second site: the plan placed it there for free (an
    input is made where it is needed), so run the block's own task again there, under the
    plan's key, rather than fetch it. Only for blocks whose dependencies are leaves (source
    data, a file handle); a block behind more work is fetched from the site that made it."""
    keys = set(external)
    task = _graph_node(alias.target, external[alias.target], keys)
    for d in task.dependencies:
        dep = external.get(d)
        if dep is None or is_future(dep) or _graph_node(d, dep, keys).dependencies:
            return alias
    task = task.copy()
    task.key = alias.key
    return task


def _graph_node(key, task, keys):
    if not isinstance(task, GraphNode):
        task = convert_legacy_task(key, task, keys)
    return task if isinstance(task, GraphNode) else DataNode(key, task)


def _ref(avail, origin, site):
    return avail[(origin, site)]


class _Value:
    """A chunk a local plan passes to the tasks reading it as an argument: an in-memory block (a
    view of the user's array, a gather's pieces) is no task of its own on one site, where
    nothing moves (``_arg``). A task's ``reads`` list it as a key (its bytes known by
    ``ChunkBytes``), so fold groups are bounded as when it was a task: a sum over many blocks
    still folds them in parallel leaves of ``FOLD_BYTES``."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _arg(k):
    """A task's argument reading ``k`` (a dask key, or a ``_Value``)."""
    return k.value if type(k) is _Value else TaskRef(k)


def _input_task(dk, spec):
    if isinstance(spec, Data):
        return DataNode(dk, spec.value)
    fn, *args = spec
    return _Call(fn, *args)


def _relabel(node, src_key, site, origin, avail):
    """No task: the relabelled copy is read under its source's key (found when first read)."""
    avail.later[(origin, site)] = partial(avail.__getitem__, (_origin_at(node.child, src_key, site), site))


@TASK.register(LocalFilter)
def _filter_task(node, key, site, origin, avail, dk):
    _relabel(node, key, site, origin, avail)
    return None


@TASK.register(LocalJoin)
def _join_task(node, key, site, origin, avail, dk):
    lk, rk = node.sources(key, site)
    left, right = avail[(_origin_at(node.left, lk, site), site)], avail[(_origin_at(node.right, rk, site), site)]
    return _Call(node.op.kernel, _arg(left), _arg(right)), [left, right]


@TASK.register(LocalAggregate)
def _aggregate_task(node, key, site, origin, avail, dk):
    members = node.members[(key, site)]
    if len(members) == 1 and not isinstance(node.op, Concat):
        return None
    refs = [_ref(avail, o, site) for _, o in members]
    if isinstance(node.op, Concat):
        order = sorted(range(len(members)), key=lambda i: members[i][0][node.op.key_dim])
        refs = [refs[i] for i in order]
        return _Call(_concat, node.op.array_dim, *map(_arg, refs)), refs
    return _Call(_fold, node.op.kernel, *map(_arg, refs)), refs


@TASK.register(LocalMap)
def _map_task(node, key, site, origin, avail, dk):
    if node.pure_copy:
        _relabel(node, node.source(key), site, origin, avail)
        return None
    refs = [_ref(avail, _origin_at(node.child, node.source(key), site), site)]
    fn, *args = node.op.chunk_task(key)
    return _Call(fn, _arg(refs[0]), *args), refs


def _fusable_joins(walk) -> dict:
    """{LocalJoin uid: LocalAggregate uid} for joins whose only consumer folds them with an
    aggregation kernel: one task per group and site then computes fold(kernel(l, r), ...)."""
    consumers: dict[int, list] = {}
    for n in walk:
        for c in n.children:
            consumers.setdefault(c.uid, []).append(n)
    out = {}
    for n in walk:
        users = consumers.get(n.uid, [])
        if (
            isinstance(n, LocalJoin)
            and len(users) == 1
            and isinstance(users[0], LocalAggregate)
            and not isinstance(users[0].op, Concat)
        ):
            out[n.uid] = users[0].uid
    return out


def _footprint(r, g, nbytes, light, site) -> int:
    """Bytes a fold task holds for its member ``r``: its chunk, and, for a member made by a task
    of this site that will be inlined into the fold, what that task reads (a chunk of a
    constant input holds nothing)."""
    if r in light:
        return 0
    own = nbytes.get(r, 0)
    if r in g.spec and r not in g.keep and g.site[r] == site:
        own += sum(0 if x in light else nbytes.get(x, 0) for x in g.reads[r])
    return own


def _fold_levels(g, dk, kernel, parts, site, inner, width):
    """Fold the keys ``parts`` (partial results on ``site``) into ``dk``, ``width`` at a time:
    a tree whose inner tasks are ``inner + (level, i)``, kept as tasks (inlined, their inputs
    would all be read by one task again)."""
    level = 1
    while len(parts) > width:
        nxt = []
        for i in range(0, len(parts), width):
            chunk = parts[i : i + width]
            if len(chunk) == 1:
                nxt.append(chunk[0])
                continue
            k = inner + (level, i // width)
            g.add(k, _Call(_fold, kernel, *map(_arg, chunk)), chunk, site)
            g.keep.add(k)
            nxt.append(k)
        parts, level = nxt, level + 1
    g.add(dk, _Call(_fold, kernel, *map(_arg, parts)), parts, site)


def _join_fold_tree(g, dk, agg, key, site, avail, nbytes, light, work, inner):
    """The tasks computing ``key`` of a local aggregation of a join's block products on
    ``site``: each folds ``memory.fold_pairs`` pairs of operands as it makes their products
    (one task when the whole group fits), and a tree folds their partial sums."""
    join = agg.child
    pairs = []
    for jkey, _ in agg.members[(key, site)]:
        lk, rk = join.sources(jkey, site)
        pairs.append(
            (_ref(avail, _origin_at(join.left, lk, site), site), _ref(avail, _origin_at(join.right, rk, site), site))
        )
    jk, ak = join.op.kernel, agg.op.kernel
    per = 1  # a task folds one pair at least: a lone pair's bytes are not looked up
    if len(pairs) > 1:
        per = mem.fold_pairs(
            max(_footprint(lr, g, nbytes, light, site) + _footprint(rr, g, nbytes, light, site) for lr, rr in pairs)
        )
    if len(pairs) <= per:
        refs = [r for p in pairs for r in p]
        g.add(dk, _Call(_join_fold, jk, ak, *map(_arg, refs)), refs, site, work)
        return
    parts = []
    for i in range(0, len(pairs), per):
        refs = [r for p in pairs[i : i + per] for r in p]
        k = inner + (0, i // per)
        g.add(k, _Call(_join_fold, jk, ak, *map(_arg, refs)), refs, site, work)
        g.keep.add(k)
        parts.append(k)
    _fold_levels(g, dk, ak, parts, site, inner, mem.fold_width(_chunk_bytes(agg.type, key)))


def _fold_tree(g, dk, agg, key, site, avail, nbytes, light, inner):
    """The tasks folding the members of ``key`` of a local aggregation on ``site``: one task
    when the members (with what a member's own task reads, inlined into the fold) fit
    ``memory.FOLD_BYTES``; else leaf tasks folding as many as fit (at least two), or, when two
    do not, the members stay tasks of their own, streamed, and a tree folds them."""
    refs = [_ref(avail, o, site) for _, o in agg.members[(key, site)]]
    kernel = agg.op.kernel
    inline = max(_footprint(r, g, nbytes, light, site) for r in refs)
    if len(refs) * inline <= mem.FOLD_BYTES:
        g.add(dk, _Call(_fold, kernel, *map(_arg, refs)), refs, site)
        return
    if mem.FOLD_BYTES // max(1, inline) < 2:  # two inlined members do not fit: each stays a task
        g.keep.update(r for r in refs if r in g.spec)
        own = max(0 if r in light else nbytes.get(r, 0) for r in refs)
        _fold_levels(g, dk, kernel, refs, site, inner, mem.fold_width(own))
        return
    _fold_levels(g, dk, kernel, refs, site, inner, mem.fold_width(inline))


def _join_fold(join_kernel, agg_kernel, *pairs):
    acc = join_kernel(pairs[0], pairs[1])
    for i in range(2, len(pairs), 2):
        acc = agg_kernel(acc, join_kernel(pairs[i], pairs[i + 1]))
    return acc


def _origin_at(node, key, site):
    for s, o in node.copies[key]:
        if s == site:
            return o
    raise KeyError((key, site))


def _fold(kernel, *chunks):
    acc = chunks[0]
    for c in chunks[1:]:
        acc = kernel(acc, c)
    return acc


def _concat(axis, *chunks):
    from ..tra.kernels import concat_chunks

    return concat_chunks(chunks, axis)


__all__ = ["emit", "Pins", "task_name", "is_plan_name", "TASK", "STEP"]
