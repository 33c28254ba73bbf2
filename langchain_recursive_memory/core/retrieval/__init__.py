"""Recall: lexical analysis and BM25, exact cosine search, the multi-scale turn ranking.

* :mod:`.lexical` - tokens and the one BM25 index;
* :mod:`.dense` - exact cosine search over a session's vectors (read by id, cached);
* :mod:`.ranking` - the multi-scale hybrid turn ranker both engines use;
* :mod:`.turns` - a session's turns as the ranker sees them (segments, dates);
* :mod:`.facts` - fact ranking;
* :mod:`.hits` - the recalled item, :class:`~.hits.RecallHit`.

The submodules are imported directly (this package re-exports nothing, so importing one
never loads the store).
"""
