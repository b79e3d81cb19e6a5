"""ThreadWarnings records the warnings of the thread that entered it, and lets other threads'
reach the user (a build cache write finished behind one build must not be said as Torch-TensorRT's
warning of the next)."""

from __future__ import annotations

import threading
import warnings

from hierviz.foundation.cache_warning import CacheWarning
from hierviz.foundation.thread_warnings import ThreadWarnings


def test_another_threads_warning_reaches_the_user_not_the_record():
    with warnings.catch_warnings(record=True) as user:
        warnings.simplefilter("always")
        with ThreadWarnings() as heard:
            warnings.warn("Torch-TensorRT: converting", UserWarning, stacklevel=1)
            other = threading.Thread(target=lambda: warnings.warn("the cache write failed", CacheWarning,
                                                                  stacklevel=1))
            other.start()
            other.join()
    assert [str(w.message) for w in heard] == ["Torch-TensorRT: converting"]
    assert [(w.category, str(w.message)) for w in user] == [(CacheWarning, "the cache write failed")]
