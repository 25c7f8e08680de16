"""Warm start: supervised fine-tuning (SFT) of an LMPolicy on demonstrations, before RL.

A cold SmolLM2-135M writes no valid program (DESIGN.md §3), so a run on the embedded LM starts from a warm
start. The library half lives here, one module per step:

- `demonstrations`: the (prompt, response) pairs to learn from (GrammarPolicy programs, earlier runs' best
  attempts);
- `fine_tune`: SFT on them and saving the result (`warm_start_policy`, `save_warm_start`); imports torch;
- `folders`: a saved warm start's folder on disk (its manifest, listing them, what a run loads from one);
  imports no torch, so the web process can list warm starts.

The web half (requests, checks, the page) is `webapp/runs/warmstarts.py` and ``manage.py warmstart``; the
worker half (gathering demonstrations for a request, running `fine_tune`) is `workers/fine_tuning.py`.
Nothing is re-exported here: import from the module, so that importing `folders` never loads torch.
"""
