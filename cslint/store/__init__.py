"""Store: everything cslint keeps on disk between runs (the cache and its memo files), sealed with the user's key."""
