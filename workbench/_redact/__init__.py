"""One redaction layer: every string the workbench writes (store rows, spec copy, labels, logs,
reports, cache rows) passes through `redact` or `redact_obj` first.

What is blanked out (replaced by `MASK`):

- values of parameters, headers and JSON keys whose *name* says they hold a secret
  (``api_key``, ``Authorization``, ``x-api-key``, ``token``, ``password``, ``*_secret``...),
  and every field of a table under such a name (``extra_body.credentials``), leaf by leaf;
- by *position*, whatever the name: every value of a header parameter (``extra_headers``,
  ``headers``) and every query-string value of a provider URL (``api_base``, ``base_url``), as
  Google-style endpoints take ``?key=...`` and proxies take ``X-Custom-Auth``;
- URL user-info: ``https://user:pass@host`` becomes ``https://***@host``;
- ``Bearer``/``Basic`` credentials and ``sk-...``-shaped provider keys in free text;
- the exact values of secret-looking environment variables currently set (``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ``*_KEY``) and of proxy credentials
  (``HTTPS_PROXY=http://user:pass@proxy``), and values registered with `register_secret` (the
  gateway registers every key, header value, query value, URL credential and nested credential
  field it is given, however long), so a value echoed back by a provider inside an error body
  is caught wherever it lands; in every form it may come back in: base64 at any alignment, hex,
  and behind URL or JSON escapes (``%2F``, ``\\u002d``, ``\\/``; see `workbench._redact._forms`).

What counts as a secret, and the registry, live in `workbench._redact._secrets`.

Why exact values as well as patterns: a proxy that echoes a token in a 401 body puts it in a
chained traceback with no ``api_key=`` in front of it; only the value itself can find it there.

JSON stays JSON: a text that is a JSON document, and that redaction would change, is parsed and
redacted as a structure, then serialised again, so masking never breaks a quote or an escape.
"""

from workbench._redact._forms import base64_forms
from workbench._redact._logging import RedactingFilter, install_log_redaction
from workbench._redact._mask import (
    MASK,
    mask_query,
    public_params,
    redact,
    redact_json,
    redact_obj,
    redactor,
)
from workbench._redact._secrets import (
    HEADER_PARAMS,
    MIN_REGISTERED_SECRET,
    URL_PARAMS,
    is_secret_name,
    positional_secrets,
    register_secret,
    register_secrets_in,
    secret_values,
    short_secret_message,
    short_secrets,
)

__all__ = [
    "HEADER_PARAMS",
    "MASK",
    "MIN_REGISTERED_SECRET",
    "RedactingFilter",
    "URL_PARAMS",
    "base64_forms",
    "install_log_redaction",
    "is_secret_name",
    "mask_query",
    "positional_secrets",
    "public_params",
    "redact",
    "redact_json",
    "redact_obj",
    "redactor",
    "register_secret",
    "register_secrets_in",
    "secret_values",
    "short_secret_message",
    "short_secrets",
]
