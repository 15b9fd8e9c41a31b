"""The web UI under /ui: server-rendered page shells plus a small vendored script that reads and
writes through the /v1 API with the visitor's token, so ACL enforcement stays in the API alone."""
