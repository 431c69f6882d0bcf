"""Files written whole and files read with care: the engine's and the app's two ways to touch disk.

`atomic_writes.py` writes a file or a folder so that a crash leaves the old one or the new one,
never half (temp file, fsync, rename; a folder swapped in whole and recovered by its readers), and
`small_reads.py` reads the small files a bundle, a config or a recipe holds: regular files only,
with a size limit, every failure one `UnusableFileError` line. Both import nothing else of the engine.
"""
