"""A scripted conflict agent for the tests: reads the forksync-resolve/1 request, answers by rule.

Behaviour by environment variable SCRIPTED_AGENT_MODE:
  resolve  - take each file's diff3 and keep both sides of every block, fork first (valid here)
  markers  - answer git's merge with markers left (the rails must refuse it)
  defer    - defer every file
  garbage  - print something that is not JSON
  sleep    - sleep past any sane timeout
  flood    - print far too much
  fail     - exit 3 with a message on stderr
A log of the requests is appended to SCRIPTED_AGENT_LOG when set.
"""

import json
import os
import sys
import time

request = json.load(sys.stdin)
mode = os.environ.get("SCRIPTED_AGENT_MODE", "resolve")
log = os.environ.get("SCRIPTED_AGENT_LOG")
if log:
    with open(log, "a") as fh:
        fh.write(json.dumps(request) + "\n")


def keep_both(diff3: str) -> str:
    out, state = [], "text"
    for line in diff3.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if bare.startswith("<<<<<<< "):
            state = "ours"
        elif bare.startswith("||||||| "):
            state = "base"
        elif bare == "=======":
            state = "theirs"
        elif bare.startswith(">>>>>>> "):
            state = "text"
        elif state != "base":
            out.append(line)
    return "".join(out)


if mode == "garbage":
    print("I think you should keep both sides.")
elif mode == "sleep":
    time.sleep(30)
elif mode == "flood":
    sys.stdout.write("x" * 200000)
elif mode == "fail":
    sys.stderr.write("model unavailable\n")
    sys.exit(3)
else:
    files = []
    for f in request["files"]:
        if mode == "defer":
            files.append({"path": f["path"], "defer": "the fork's variant needs its owner"})
        elif mode == "markers":
            files.append(
                {"path": f["path"], "resolved": f["diff3"], "action": "Took the merge", "reason": "lazy"}
            )
        else:
            files.append(
                {
                    "path": f["path"],
                    "resolved": keep_both(f["diff3"]),
                    "action": "Kept both the fork's and upstream's lines",
                    "reason": "both sides add independent lines",
                }
            )
    print(json.dumps({"files": files}))
