"""The Kilo CLI source (the OpenCode reader under Kilo's names) on a 1,000-session kilo.db
cloned from the Kilo samples with fresh ids: sessions read per second, and what a refresh
costs when nothing changed and when one session did (bench_opencode.py's measures).

    python bench/bench_kilo.py [DATA_DIR]   (builds bench/corpus/kilo if missing)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_opencode

if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    bench_opencode.APP = "kilo"
    bench_opencode.main(__file__)
