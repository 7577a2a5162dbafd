"""Known-good configurations published by the engines' own projects, turned into qwen-doctor profiles.

    read_sources([Path, ...]) -> Sources      # vllm-project/recipes model / strategy / taxonomy files, sgl-cookbook files
    candidates(sources, targets) -> [Candidate]   # one resolved command per recipe entry and hardware
    import_profiles(paths, ...) -> ImportResult   # validated profiles (YAML text) and the entries skipped, with why

Modules: sources (reading files, provenance, schema drift), vllm_recipes (the recipes site's command synthesis
for single-node strategies), cookbook (sgl-cookbook model files), emit (profile YAML), importer (validation).
"""
