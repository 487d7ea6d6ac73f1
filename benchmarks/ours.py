"""pi-server side of the benchmark: one measurement per fresh process, JSON on stdout.

python benchmarks/ours.py measure FILE
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def measure(path: str) -> dict:
    from pi_server.llm.formats import context_result
    from pi_server.server.wire import encode
    from pi_server.store.index import SessionIndex
    from pi_server.tree.outline import Outline, get_tree
    from pi_server.tree.paths import path_to

    base = rss()
    c0, t0 = time.process_time(), time.perf_counter()
    idx = SessionIndex.open(path)
    c1, t1 = time.process_time(), time.perf_counter()
    index_rss = rss()
    outline = Outline(idx)
    first = get_tree(outline, idx.last_id, "default", "", (), 0, 200)
    c2, t2 = time.process_time(), time.perf_counter()
    first_rss = rss()
    ctx = context_result(idx, None)
    c3, t3 = time.process_time(), time.perf_counter()

    # 200-row windows anywhere in the tree, warm (layout cached), in the form the editors ask
    # for (gutters shared per window), encoded as the wire sends them
    rnd = random.Random(7)
    windows = []
    for _ in range(200):
        off = rnd.randrange(0, max(1, first["total"] - 200))
        s = time.perf_counter()
        encode(get_tree(outline, idx.last_id, "default", "", (), off, 200, shared_gutters=True))
        windows.append(time.perf_counter() - s)

    # a leaf whose context has ~10,000 messages: walk back along the last path
    path_positions = path_to(idx, len(idx) - 1)
    lo, hi = 0, len(path_positions) - 1
    target = 10_000
    while lo < hi:
        mid = (lo + hi) // 2
        n = len(context_result(idx, idx.ids[path_positions[mid]])["messages"])
        if n < target:
            lo = mid + 1
        else:
            hi = mid
    leaf10k = idx.ids[path_positions[lo]]
    idx.clear_cache()
    s = time.perf_counter()
    c10 = context_result(idx, leaf10k)
    cold10 = time.perf_counter() - s
    warm = []
    for _ in range(20):
        s = time.perf_counter()
        context_result(idx, leaf10k)
        warm.append(time.perf_counter() - s)
    # the answer's encoding to JSON bytes, as the server sends it (server/wire.py)
    encoded = []
    for _ in range(10):
        s = time.perf_counter()
        body = encode(c10).data
        encoded.append(time.perf_counter() - s)
    return {
        "indexSeconds": t1 - t0,
        "firstTreeSeconds": t2 - t1,
        "indexPlusFirstAnswerSeconds": t2 - t0,
        # CPU time of this process: on a machine shared with other work, steadier than wall time
        "indexCpuSeconds": c1 - c0,
        "firstTreeCpuSeconds": c2 - c1,
        "firstAnswerSeconds": t3 - t0,
        "contextSeconds": t3 - t2,
        "contextCpuSeconds": c3 - c2,
        "firstAnswerCpuSeconds": c3 - c0,
        "contextMessages": len(ctx["messages"]),
        "rowsTotal": first["total"],
        "windowP50Seconds": statistics.median(windows),
        "windowP99Seconds": sorted(windows)[int(len(windows) * 0.99) - 1],
        "context10kMessages": len(c10["messages"]),
        "leaf10kId": leaf10k,
        "context10kColdSeconds": cold10,
        "context10kWarmP50Seconds": statistics.median(warm),
        "context10kEncodeP50Seconds": statistics.median(encoded),
        "context10kBytes": len(body),
        "baselineRssBytes": base,
        "indexRssBytes": index_rss,
        "indexRssDeltaBytes": index_rss - base,
        "firstTreeRssBytes": first_rss,
        "endRssBytes": rss(),
        "entries": len(idx),
    }


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "measure":
        sys.exit(__doc__)
    print(json.dumps(measure(sys.argv[2])))
