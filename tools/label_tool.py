#!/usr/bin/env python3
"""Drop-in twin of MindCluster's multilevel-label-tool/label_tool.py, running topology-labeler.

Same command line, prompts, messages and exit codes; the work is done by
labeler.commands.mindcluster.label_tool_main
(see its docstring for the deliberate, safer differences).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labeler.commands.mindcluster import label_tool_main

if __name__ == "__main__":
    sys.exit(label_tool_main())
