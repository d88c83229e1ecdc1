"""The gateway (SPEC §10): a Starlette app on uvicorn in the daemon's event loop.

    gateway.app            create_app(dispatcher, *, pairing_codes=None) -> Starlette
    gateway.server         start_gateway(app, host=…, port=…, …) -> GatewayHandle (url, ws_url, close())
    gateway.rest           the REST routes, one module per group (each over its JSON-RPC twin)
    gateway.openapi        /openapi.json, generated from the routes' models (above gateway.rest)
    app.auth.pairing_codes  PairingCodes: one-time 6-digit codes for POST /pair

Submodules are imported explicitly, so `--no-gateway` never pays for importing uvicorn.
"""
