"""Who is calling (R-AUTH-3): the credential a connection presented and the principal it maps to now.

A connection keeps its credential (its uid, or the pairing token it presented) and re-resolves the principal
whenever `generation` moves — a config commit touching users/profiles, or a pairing change — so a revoked
token or a removed user is refused at that connection's next call (R-AUTH-4, R-AUTH-5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.auth.policy import Policy, Principal
from app.config.schema import Config

__all__ = ["Authenticator", "Credential", "TokenResolver"]


@dataclass(frozen=True, slots=True)
class Credential:
    uid: int | None = None
    token_id: str | None = None
    user: str | None = None  # the user a token is bound to


class TokenResolver:
    """What the authenticator needs from the pairing store (kept abstract so the endpoint works without it)."""

    on_change: Callable[[], None] = staticmethod(lambda: None)  # set by the Authenticator

    async def resolve(self, token: str) -> tuple[str, str] | None:  # (token_id, user)
        return None

    def is_active(self, token_id: str) -> bool:
        return False


class Authenticator:
    def __init__(self, config: Callable[[], Config], config_generation: Callable[[], int], daemon_uid: int) -> None:
        self._config = config
        self._config_generation = config_generation
        self._daemon_uid = daemon_uid
        self._tokens: TokenResolver = TokenResolver()
        self._policy: tuple[int, Policy] | None = None
        # Moves whenever who-may-do-what may have changed; connections compare it on every call, so it is a
        # plain int rather than something computed.
        self.generation = 0

    def policy_changed(self) -> None:
        """A config commit or a pairing change: every connection re-resolves its principal at its next call."""
        self.generation += 1

    @property
    def tokens(self) -> TokenResolver:
        return self._tokens

    @tokens.setter
    def tokens(self, tokens: TokenResolver) -> None:
        self._tokens = tokens
        tokens.on_change = self.policy_changed

    def policy(self) -> Policy:
        gen = self._config_generation()
        if self._policy is None or self._policy[0] != gen:
            self._policy = (gen, Policy.from_config(self._config()))
        return self._policy[1]

    def local(self, uid: int) -> tuple[Credential, Principal] | None:
        principal = self.policy().for_uid(uid, self._daemon_uid)
        return None if principal is None else (Credential(uid=uid), principal)

    async def token(self, token: str) -> tuple[Credential, Principal] | None:
        found = await self.tokens.resolve(token)
        if found is None:
            return None
        token_id, user = found
        principal = self.policy().for_user(user)
        return None if principal is None else (Credential(token_id=token_id, user=user), principal)

    def refresh(self, credential: Credential | None) -> Principal | None:
        if credential is None:
            return None
        if credential.token_id is not None:
            if credential.user is None or not self.tokens.is_active(credential.token_id):
                return None
            return self.policy().for_user(credential.user)
        if credential.uid is not None:
            return self.policy().for_uid(credential.uid, self._daemon_uid)
        return None
