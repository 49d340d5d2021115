"""The protocol's two small documents in the bucket (`bucket.py` has the layout): the pointer,
`current.json`, which commits a release and remembers the ones before it, and the lease,
`lease.json`, which marks a publish in progress. Each is read by one `parse` that refuses
anything else as `Damaged` in one line, and written by one `to_json`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from pipeline.publish.bucket import LEASE, POINTER, damaged, get

if TYPE_CHECKING:
    from obstore.store import ObjectStore


def _text(obj: Any, field: str) -> str:
    """`obj[field]`, a string; otherwise `TypeError`/`KeyError` (read as damaged)."""
    value = obj[field]
    if not isinstance(value, str):
        raise TypeError(field)
    return value


def _optional_text(obj: dict[str, Any], field: str) -> str | None:
    value = obj.get(field)
    if value is not None and not isinstance(value, str):
        raise TypeError(field)
    return value


def _object(data: bytes) -> dict[str, Any]:
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return value


@dataclass(frozen=True)
class PointerEntry:
    """A committed release, as the pointer's history names it (newest first)."""

    release: str  # <build_id>.<publish>
    document: str  # its release document's key
    sha256: str  # the document's SHA-256
    committed_at: str  # ISO 8601, when its pointer was written

    @classmethod
    def parse(cls, obj: Any) -> PointerEntry:
        """Raises `TypeError`/`KeyError` for anything but an entry."""
        fields = ("release", "document", "sha256", "committed_at")
        return cls(*(_text(obj, f) for f in fields))

    def to_dict(self) -> dict[str, str]:
        return {
            "release": self.release,
            "document": self.document,
            "sha256": self.sha256,
            "committed_at": self.committed_at,
        }


@dataclass(frozen=True)
class Pointer:
    """The pointer, `current.json`: the committed release, the publish that wrote it, the
    releases committed before (newest first, itself included) and the last collection that
    rewrote it."""

    release: str
    document: str
    sha256: str
    committed_at: str
    build_id: str
    publish: str | None
    history: list[PointerEntry]
    collected: str | None = None  # the collection that last rewrote it
    collected_at: str | None = None

    @property
    def entry(self) -> PointerEntry:
        return PointerEntry(self.release, self.document, self.sha256, self.committed_at)

    @classmethod
    def parse(cls, url: str, data: bytes) -> Pointer:
        """The pointer in `data`; anything else raises `Damaged` in one line."""
        try:
            obj = _object(data)
            history = obj["history"]
            if not isinstance(history, list):
                raise TypeError("history")
            return cls(
                release=_text(obj, "release"),
                document=_text(obj, "document"),
                sha256=_text(obj, "sha256"),
                committed_at=_text(obj, "committed_at"),
                build_id=_text(obj, "build_id"),
                publish=_optional_text(obj, "publish"),
                history=[PointerEntry.parse(e) for e in history],
                collected=_optional_text(obj, "collected"),
                collected_at=_optional_text(obj, "collected_at"),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise damaged(url, POINTER, "damaged (not a release pointer)") from None

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {**self.entry.to_dict(), "build_id": self.build_id}
        if self.publish is not None:
            doc["publish"] = self.publish
        doc["history"] = [e.to_dict() for e in self.history]
        if self.collected is not None:
            doc["collected"] = self.collected
        if self.collected_at is not None:
            doc["collected_at"] = self.collected_at
        return orjson.dumps(doc)


@dataclass(frozen=True)
class Lease:
    """The lease, `lease.json`: the publish in progress, until it expires (advisory)."""

    build_id: str
    publish: str | None
    expires: str  # ISO 8601 with its zone, to the second

    @property
    def expires_at(self) -> datetime:
        return datetime.fromisoformat(self.expires)

    @classmethod
    def parse(cls, url: str, data: bytes) -> Lease:
        """The lease in `data`; anything else raises `Damaged` in one line."""
        try:
            obj = _object(data)
            lease = cls(str(obj["build_id"]), _optional_text(obj, "publish"), _text(obj, "expires"))
            if lease.expires_at.tzinfo is None:
                raise ValueError("expires: no zone")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise damaged(url, LEASE, "damaged (not a lease)") from None
        return lease

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {"build_id": self.build_id}
        if self.publish is not None:
            doc["publish"] = self.publish
        doc["expires"] = self.expires
        return orjson.dumps(doc)


async def read_pointer(store: ObjectStore, url: str) -> tuple[Pointer | None, str | None]:
    """The pointer and its ETag; (None, None) in a bucket never published to. Damaged raises
    `Damaged` in one line."""
    got = await get(store, POINTER)
    if got is None:
        return None, None
    return Pointer.parse(url, got.data), got.e_tag
