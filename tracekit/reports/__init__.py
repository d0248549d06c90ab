"""One module per output: the summary (text and JSON), Perfetto traces, plots."""
