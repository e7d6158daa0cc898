#!/usr/bin/env python3
"""docs/architecture.md's module table against the CMake files: each folder's "links" column must
name exactly the sweep libraries (and LibTorch) its target links, so the map cannot drift from
what the build enforces. Run by CTest as docs.architecture_map; exits 1 naming each difference."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
doc = (root / "docs/architecture.md").read_text()

# The table: | `folder` | holds | links |
table = {}
for line in doc.splitlines():
    m = re.match(r"^\| `([^`]+)` \| .* \| ([^|]+) \|$", line)
    if m:
        links = m.group(2).strip()
        names = set() if links.startswith("—") else {n.strip() for n in links.split(",")}
        table[m.group(1)] = names

# The targets: sweep_<m> for each folder, from target_link_libraries(<target> ...)
def links_of(cmake: pathlib.Path, target: str) -> set:
    text = cmake.read_text()
    m = re.search(r"target_link_libraries\(\s*" + re.escape(target) + r"\s([^)]*)\)", text)
    if not m:
        return None
    found = set()
    for word in m.group(1).split():
        if word == "sweep_torch":
            found.add("LibTorch")
        elif word == "sweep_pcre2":
            found.add("PCRE2")
        elif word.startswith("sweep_") and word != "sweep_warnings" and not word.startswith("sweep_kernels_"):
            found.add(word[len("sweep_"):])
    return found

targets = {}
for cmake in [*sorted((root / "src").glob("*/CMakeLists.txt")), root / "kernels/CMakeLists.txt"]:
    folder = cmake.parent.relative_to(root).as_posix()
    module = cmake.parent.name
    got = links_of(cmake, "sweep_" + module)
    if got is not None:
        targets[folder] = got
cli = root / "src/cli/CMakeLists.txt"
common = links_of(cli, "sweep_cli_common")
targets["src/cli"] = (links_of(cli, "sweep") - {"cli_common"}) | common
targets["src/cli/core"] = links_of(cli, "sweep-core") - {"cli_common"}
# header-only folders have no CMakeLists.txt: listed with "—"
for folder in sorted((root / "src").iterdir()):
    if folder.is_dir() and not (folder / "CMakeLists.txt").exists():
        targets[folder.relative_to(root).as_posix()] = set()

problems = []
for folder, links in sorted(targets.items()):
    if folder not in table:
        problems.append(f"{folder}: a module the table does not list (links {', '.join(sorted(links)) or 'nothing'})")
    elif table[folder] != links:
        problems.append(f"{folder}: the table says {', '.join(sorted(table[folder])) or '—'}; "
                        f"its CMake target links {', '.join(sorted(links)) or 'nothing'}")
for folder in sorted(set(table) - set(targets)):
    problems.append(f"{folder}: in the table, but no such module")
# every folder of src/ has its short README
for folder in sorted(set(targets)):
    readme = root / folder / "README.md"
    if not readme.exists():
        problems.append(f"{folder}: no README.md")
    elif len(readme.read_text().splitlines()) > 10:
        problems.append(f"{folder}/README.md: {len(readme.read_text().splitlines())} lines, more than 10")
for p in problems:
    print("docs/architecture.md:", p)
print(f"{len(targets)} modules checked against the table: {'ok' if not problems else f'{len(problems)} problems'}")
sys.exit(1 if problems else 0)
