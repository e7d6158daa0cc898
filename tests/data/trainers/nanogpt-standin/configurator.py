# The stand-in's configurator (README.md): config files exec'd into the globals, then --key=value
# overrides of known globals of the same type, as nanoGPT's configurator takes them.
import sys
from ast import literal_eval

for _arg in sys.argv[1:]:
    if not _arg.startswith("--"):
        print(f"Overriding config with {_arg}:")
        print(open(_arg).read())
        exec(open(_arg).read())
        continue
    _key, _value = _arg[2:].split("=", 1)
    if _key not in globals():
        raise ValueError(f"Unknown config key: {_key}")
    try:
        _parsed = literal_eval(_value)
    except (SyntaxError, ValueError):
        _parsed = _value
    assert type(_parsed) == type(globals()[_key]), f"{_key}: {_value}"
    print(f"Overriding: {_key} = {_parsed}")
    globals()[_key] = _parsed
