"""The gateway (SPEC §10): a Starlette app on uvicorn in the daemon's event loop.

    gateway.app            create_app(dispatcher, *, pairing_codes=None) -> Starlette
    gateway.server         start_gateway(app, host=…, port=…, …) -> GatewayHandle (url, ws_url, close())
    app.auth.pairing_codes  PairingCodes: one-time 6-digit codes for POST /pair

Submodules are imported explicitly, so `--no-gateway` never pays for importing uvicorn.
"""
