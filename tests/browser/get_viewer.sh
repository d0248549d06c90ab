#!/bin/bash
# Fetch the offline trace viewer for tests/test_trace_browser.py into tests/browser/assets/:
# catapult's trace_viewer_full.html from the torch-tb-profiler wheel, webcomponents.js 0.7.24 from npm.
# Needs: pip and npm reaching their registries; chromium (apt-get install chromium) for the test itself.
set -euo pipefail
cd "$(dirname "$0")" && mkdir -p assets && tmp=$(mktemp -d)
python3 -m pip download -q --no-deps torch-tb-profiler==0.4.3 -d "$tmp"
(cd "$tmp" && unzip -q -o torch_tb_profiler-*.whl 'torch_tb_profiler/static/trace_viewer_full.html' && npm pack -q webcomponents.js@0.7.24 >/dev/null && tar xzf webcomponents.js-0.7.24.tgz)
cp "$tmp/torch_tb_profiler/static/trace_viewer_full.html" "$tmp/package/webcomponents.min.js" assets/
cp view.html assets/
echo "viewer assets in $(pwd)/assets"
