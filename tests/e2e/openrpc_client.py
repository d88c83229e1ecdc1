"""A JSON-RPC client made at run time from the daemon's OpenRPC document and nothing else (R-DISC-1): a method is
an attribute (`session/new` → `session_new`), its params are checked against the document's content descriptors
before they go out, its result and the notifications that arrive are checked against the document's schemas."""

from __future__ import annotations

from typing import Any

from e2e_harness import Client
from jsonschema import Draft202012Validator


class OpenRpcClient:
    def __init__(self, client: Client, document: dict[str, Any]) -> None:
        self._client, self._document = client, document
        self._methods = {_attribute(m["name"]): m for m in document["methods"]}
        self._notifications = {n["name"]: n["params"] for n in document.get("x-notifications", ())}

    def _check(self, schema: dict[str, Any], value: Any) -> None:
        # Validated within the document, so `#/components/...` references resolve.
        Draft202012Validator({**schema, "components": self._document["components"]}).validate(value)

    def __getattr__(self, name: str) -> Any:
        method = self._methods[name]  # KeyError: the document has no such method

        async def call(**params: Any) -> Any:
            descriptors = {p["name"]: p for p in method["params"]}
            assert set(params) <= set(descriptors), f"{method['name']} takes {sorted(descriptors)}"
            for p in descriptors.values():
                assert p["name"] in params or not p.get("required"), f"{method['name']} needs {p['name']}"
            for key, value in params.items():
                self._check(descriptors[key]["schema"], value)
            result = await self._client.call(method["name"], params)
            self._check(method["result"]["schema"], result)
            return result

        return call

    def notifications(self) -> list[dict[str, Any]]:
        """The notifications received so far, each checked against the schema the document declares for it."""
        for frame in self._client.notifications:
            self._check(self._notifications[frame["method"]], frame["params"])
        return self._client.notifications


def _attribute(method: str) -> str:
    return method.replace("/", "_").replace(".", "_").replace("-", "_")
