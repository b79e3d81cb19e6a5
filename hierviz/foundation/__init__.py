"""What every layer uses and nothing of hierviz's own: op-name parsing (opnames.py), torch's own
output held back until it matters (torch_output.py), the collector paused around hot loops
(gcpause.py), content digests that are the same in every process (digests.py) and one writer at a
time across processes (file_lock.py)."""
