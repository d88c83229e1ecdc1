"""`/openapi.json` (R-GW-2): the REST surface of `gateway/rest/` described as an OpenAPI 3.1 document, generated
from its models. It sits above the routes it describes (it reads their bodies), never below them.

    document     openapi_spec(version), openapi_endpoint(version): the document and the route that serves it
    paths        the paths, one builder per group of routes, with their summaries
    operations   one operation and the statuses it can answer
    components   the shared schemas, plus OpenAPI's parameters read from a params model
    models       the REST answers as msgspec Structs

Nothing is imported here: each module is imported by name.
"""
