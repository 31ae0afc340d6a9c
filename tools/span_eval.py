#!/usr/bin/env python3
"""Compares harness's compaction of a span with the summary the agent wrote for it.

For each transcript of eval/ that compacted itself (eval/README.md "Sessions that compacted
themselves": NAME, the index its compaction came before, and NAME.span.facts.json), this:
  1. cuts NAME.json to its first INDEX messages (the span the agent summarized) into a scratch
     directory with the span's facts as its facts, and runs `harness eval` on it (the offline
     compactor, or --compactor), so harness is scored on summary + retained tail;
  2. scores the agent's own summary (SUMMARY_DIR/NAME.cc-summary.txt) alone against the same
     facts, by eval's rule (docs/eval.md "Facts files": every keyword, or every keyword of one
     alternative, found case-insensitively with white space collapsed).
  3. with --agent-summary-as-compactor, also has the agent's summary stand in for the compactor's
     answer on the span: harness converts it to its grammar (the extractive compactor carries
     a leading foreign summary forward: docs/spec/foreign-summary.md), a scripted compactor
     answers with that, and `harness eval` scores it with the retained tail under coverage
     `report` (the agent's summary as it is) and `repair` (its missing anchors written in).
Prints one line per span and window, and the totals.

Usage: tools/span_eval.py HARNESS SUMMARY_DIR (eval/ holds them) [--compactor SPEC] [--eval-dir eval]
                          [--agent-summary-as-compactor]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SPANS = {  # NAME: the index of the first message after the agent's compaction
    "claude-code-entire-clean-branch-delete": 190,
    "claude-code-entire-gemini-transcript": 155,
    "claude-code-entire-orphaned-sessions": 81,
    "claude-code-entire-worktree-index": 360,
}


def normalize(text):
    lowered = "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)
    return re.sub(r"[ \t\r\n\f\v]+", " ", lowered).strip()


def kept(fact, text):
    lists = [fact["keywords"]] if fact["keywords"] else []
    lists += fact.get("or_keywords", [])
    return any(all(normalize(k) in text for k in keys) for keys in lists if keys)


def write_span(eval_dir, name, index, directory):
    """NAME's first INDEX messages as DIRECTORY/NAME.json, with the span's facts as its facts."""
    with open(os.path.join(eval_dir, name + ".json"), encoding="utf-8") as f:
        messages = json.load(f)
    with open(os.path.join(directory, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(messages[:index], f, ensure_ascii=False)
    with open(os.path.join(eval_dir, name + ".span.facts.json"), "rb") as src, \
            open(os.path.join(directory, name + ".facts.json"), "wb") as dst:
        dst.write(src.read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("harness")
    parser.add_argument("summary_dir")
    parser.add_argument("--compactor", default=None)
    parser.add_argument("--eval-dir", default="eval")
    parser.add_argument("--agent-summary-as-compactor", action="store_true")
    args = parser.parse_args()
    if args.agent_summary_as_compactor:
        return agent_summary_as_compactor(args)
    totals = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, index in SPANS.items():
            write_span(args.eval_dir, name, index, scratch)
        command = [args.harness, "eval", scratch, "--json"]
        if args.compactor:
            command += ["--compactor", args.compactor]
        run = subprocess.run(command, capture_output=True, text=True)
        results = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    for name in SPANS:
        with open(os.path.join(args.eval_dir, name + ".span.facts.json"), encoding="utf-8") as f:
            facts = json.load(f)
        path = os.path.join(args.summary_dir, name + ".cc-summary.txt")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                summary = f.read()
            text = normalize(summary)
            own = sum(kept(fact, text) for fact in facts)
            print(f"{name} agent's own summary: {own}/{len(facts)} facts, "
                  f"{(len(summary.encode()) + 3) // 4} tokens (bytes/4)")
            t = totals.setdefault("agent", [0, 0])
            t[0] += own
            t[1] += len(facts)
        for r in results:
            if r.get("type") != "EvalResult" or r.get("name") != name:
                continue
            setting = r.get("setting")
            if r.get("outcome") != "committed":
                print(f"{name} harness {setting}: {r.get('outcome')} {r.get('reason', '')}")
                continue
            print(f"{name} harness {setting}: {r['facts_kept']}/{r['facts']} facts, "
                  f"{r['tokens_before']} -> {r['tokens_after']} tokens")
            t = totals.setdefault("harness " + setting, [0, 0])
            t[0] += r["facts_kept"]
            t[1] += r["facts"]
    for key, (k, n) in totals.items():
        print(f"total {key}: {k}/{n} ({100.0 * k / n:.1f}%)")
    return 0


def converted(harness, summary, scratch):
    """The agent's summary in harness's grammar: what the extractive compactor makes of a
    history that begins with it."""
    user = lambda text: {"role": "user", "blocks": [{"type": "text", "text": text}]}
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
             "cache_creation_tokens": 0, "reasoning_tokens": 0}
    said = lambda text: {"role": "assistant", "usage": usage,
                         "blocks": [{"type": "text", "text": text}]}
    path = os.path.join(scratch, "carried.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump([user(summary), said("Noted."), user("Go on."), said("Going on.")], f)
    run = subprocess.run([harness, "compact", path, "--json", "--data-dir",
                          os.path.join(scratch, "data"), "--keep-recent-segments", "1",
                          "--keep-recent-tokens", "1", "--max-summary-tokens", "8192"],
                         capture_output=True, text=True)
    for line in run.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") == "CompactionCommitted":
            return record["summary"]["blocks"][0]["text"]
    raise SystemExit("converting the agent's summary failed: " + run.stdout + run.stderr)


def agent_summary_as_compactor(args):
    totals = {}
    for name, index in SPANS.items():
        path = os.path.join(args.summary_dir, name + ".cc-summary.txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            summary = f.read()
        with tempfile.TemporaryDirectory() as scratch:
            xml = converted(args.harness, summary, scratch)
            script = os.path.join(scratch, "script.json")
            with open(script, "w", encoding="utf-8") as f:
                json.dump([{"summary": xml}] * 64, f)
            spans = os.path.join(scratch, "spans")
            os.mkdir(spans)
            write_span(args.eval_dir, name, index, spans)
            for mode in ("report", "repair"):
                run = subprocess.run([args.harness, "eval", spans, "--json", "--compactor",
                                      "scripted:" + script, "--coverage", mode],
                                     capture_output=True, text=True)
                for line in run.stdout.splitlines():
                    r = json.loads(line)
                    if r.get("type") != "EvalResult" or r.get("setting") != "full":
                        continue
                    if r.get("outcome") != "committed":
                        print(f"{name} agent's summary, {mode}: {r.get('outcome')} "
                              f"{r.get('reason', '')} {r.get('detail', '')}")
                        continue
                    print(f"{name} agent's summary + tail, {mode}: {r['facts_kept']}/{r['facts']}"
                          f" facts, repaired {r.get('repaired', 0)}, {r['tokens_after']} tokens")
                    t = totals.setdefault(mode, [0, 0])
                    t[0] += r["facts_kept"]
                    t[1] += r["facts"]
    for key, (k, n) in totals.items():
        print(f"total agent's summary + tail, {key}: {k}/{n} ({100.0 * k / n:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
