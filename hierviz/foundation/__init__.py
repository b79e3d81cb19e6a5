"""What every layer uses and nothing of hierviz's own: op-name parsing (opnames.py), torch's own
output held back until it matters (torch_output.py), the collector paused around hot loops
(gcpause.py), content digests that are the same in every process (digests.py), one writer at a
time across processes (file_lock.py), and the one disk store every cache keeps its entries in
(disk_store.py; temp files named for their writer, temp_files.py; the caches' folder, bound and
warning, cache_folder.py, cache_limit.py, cache_warning.py)."""
