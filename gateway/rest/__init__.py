"""The REST surface (R-GW-2, R-GW-3, R-GW-6, R-ARCH-3): one module per group of routes, each route an adapter over
its JSON-RPC twin (authenticate the bearer, then `dispatcher.call` the twin: its admission, params model, handler,
error boundary and audit). Failures come back as the `RpcError` the twin would have answered, rendered by the app's
`RpcError` handler (gateway/errors.py). `gateway/app.py` puts the routes in its table.

    body       json_object(): a request's JSON object body
    public     health, /openrpc.json (no token)
    pairing    POST /pair, its body PairBody (a one-time code, no token)
    system     /api/status, /metrics
    config     /api/config, /api/config/{prop}
    sessions   /api/sessions…
    webhook    POST /webhook/{agent}, its body WebhookBody

`/openapi.json` describes these routes, so it lives above them, in `gateway/openapi/`. Nothing is imported here:
each module is imported by name.
"""
