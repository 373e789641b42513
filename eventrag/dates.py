"""Date normalisation: raw time text -> ISO date or interval, relative to the document's date.

Common absolute forms (years, "11 November 875", "March 3, 1999", "1939–1945", "the 1990s") are parsed
by fast rules; everything else ("yesterday", "two weeks later", "last March") goes to dateparser with
the document date as the relative base. `find_dates` locates dates in running text for the no-LLM
extractor without calling dateparser at all.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime

from eventrag.schema import EventTime

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_MON = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|Jun(?:e)?|Jul(?:y)?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_YEAR = r"(?:1\d{3}|20\d{2}|[1-9]\d{1,2}(?=\s*(?:AD|CE|BC|BCE)\b))"

_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\.?,?\s+({_YEAR}|\d{{3,4}})\b", re.I)
_MDY = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+({_YEAR}|\d{{3,4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MY = re.compile(rf"\b({_MON})\.?,?\s+({_YEAR})\b", re.I)
_RANGE = re.compile(rf"\b({_YEAR})\s*(?:–|—|-|to|until|and)\s*({_YEAR}|\d{{2}})\b")
_DECADE = re.compile(r"\b(?:the\s+)?(1\d{2}0|20\d0)s\b", re.I)
_YEAR_ONLY = re.compile(rf"\b(?:in|on|since|by|from|of|during|year|born|died|until|around|c\.)?\s*({_YEAR})\b")


def _iso(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}"


def _valid(y: int, m: int, d: int) -> bool:
    try:
        date(y, m, d)
    except ValueError:
        return False
    return True


def _last_day(y: int, m: int) -> int:
    return calendar.monthrange(y, m)[1]


def parse_absolute(raw: str) -> EventTime | None:
    """Fast rule-based parse of the first absolute date expression in `raw`."""
    text = raw.strip()
    for rx, order in ((_DMY, "dmy"), (_MDY, "mdy")):
        m = rx.search(text)
        if m:
            if order == "dmy":
                d, mon, y = int(m.group(1)), _MONTHS[m.group(2).lower().rstrip(".")], int(m.group(3))
            else:
                mon, d, y = _MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2)), int(m.group(3))
            if _valid(y, mon, d):
                return EventTime(raw=raw, start=_iso(y, mon, d), end=_iso(y, mon, d), granularity="day")
    m = _ISO.search(text)
    if m and _valid(int(m.group(1)), int(m.group(2)), int(m.group(3))):
        iso = m.group(0)
        return EventTime(raw=raw, start=iso, end=iso, granularity="day")
    m = _MY.search(text)
    if m:
        mon, y = _MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2))
        return EventTime(raw=raw, start=_iso(y, mon, 1), end=_iso(y, mon, _last_day(y, mon)), granularity="month")
    m = _RANGE.search(text)
    if m:
        y1, y2s = int(m.group(1)), m.group(2)
        y2 = int(y2s) if len(y2s) > 2 else (y1 // 100) * 100 + int(y2s)
        if y2 >= y1:
            return EventTime(raw=raw, start=_iso(y1, 1, 1), end=_iso(y2, 12, 31), granularity="year")
    m = _DECADE.search(text)
    if m:
        y = int(m.group(1))
        return EventTime(raw=raw, start=_iso(y, 1, 1), end=_iso(y + 9, 12, 31), granularity="decade")
    m = _YEAR_ONLY.search(text)
    if m:
        y = int(m.group(1))
        return EventTime(raw=raw, start=_iso(y, 1, 1), end=_iso(y, 12, 31), granularity="year")
    return None


def _granularity_of(raw: str) -> str:
    low = raw.lower()
    if re.search(r"\b(year|annual)\b", low) and not re.search(r"\d{1,2}\b(?!\d)", low):
        return "year"
    if re.search(r"\b(month)\b", low) or (re.search(_MON, raw, re.I) and not re.search(r"\b\d{1,2}\b", low)):
        return "month"
    return "day"


def normalise_time(raw: str | None, doc_date: str | None = None) -> EventTime:
    """Normalise a time expression; relative ones ("yesterday", "two days later") use `doc_date`."""
    if not raw or not raw.strip():
        return EventTime()
    raw = raw.strip()[:200]
    parsed = parse_absolute(raw)
    if parsed is not None:
        return parsed
    base: datetime | None = None
    if doc_date:
        fixed = parse_absolute(doc_date)
        if fixed is not None and fixed.start:
            base = datetime.fromisoformat(fixed.start)
    import dateparser  # imported lazily: ~0.3 s import, unneeded for absolute dates

    dp_settings: dict[str, object] = {"PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": False}
    if base is not None:
        dp_settings["RELATIVE_BASE"] = base
    try:
        when = dateparser.parse(raw, languages=["en"], settings=dp_settings)  # type: ignore[arg-type]
    except Exception:  # dateparser raises assorted errors on odd input
        when = None
    if when is None:
        return EventTime(raw=raw)
    if base is None and not re.search(r"\d", raw):
        # a relative expression without a document date would be anchored to "now": keep it raw
        return EventTime(raw=raw)
    gran = _granularity_of(raw)
    d = when.date()
    if gran == "year":
        return EventTime(raw=raw, start=_iso(d.year, 1, 1), end=_iso(d.year, 12, 31), granularity="year")
    if gran == "month":
        return EventTime(raw=raw, start=_iso(d.year, d.month, 1),
                         end=_iso(d.year, d.month, _last_day(d.year, d.month)), granularity="month")
    return EventTime(raw=raw, start=d.isoformat(), end=d.isoformat(), granularity="day")


_FIND_RES = (_DMY, _MDY, _ISO, _MY, _RANGE, _DECADE)


def _in_identifier(text: str, s: int, e: int) -> bool:
    """A number inside a code such as certificate "NMMB-2013-114" or "ISO/2009", not a year."""
    after_code = s >= 2 and text[s - 1] in "-/" and text[s - 2].isalpha()
    before_code = re.match(r"[-/]\d{3}", text[e : e + 4]) is not None
    return after_code or before_code


def find_dates(text: str) -> list[tuple[int, int, EventTime]]:
    """(start, end, time) of date expressions in `text`, most specific first, non-overlapping."""
    found: list[tuple[int, int, EventTime]] = []
    taken: list[tuple[int, int]] = []

    def free(s: int, e: int) -> bool:
        return all(e <= a or s >= b for a, b in taken)

    for rx in _FIND_RES:
        for m in rx.finditer(text):
            if free(m.start(), m.end()):
                t = parse_absolute(m.group(0))
                if t is not None:
                    found.append((m.start(), m.end(), t))
                    taken.append((m.start(), m.end()))
    for m in re.finditer(rf"\b({_YEAR})\b", text):
        if free(m.start(1), m.end(1)) and not _in_identifier(text, m.start(1), m.end(1)):
            y = int(m.group(1))
            if y < 1000 and not re.match(r"\s*(AD|CE|BC|BCE)\b", text[m.end(1):]):
                continue
            t = EventTime(raw=m.group(1), start=_iso(y, 1, 1), end=_iso(y, 12, 31), granularity="year")
            found.append((m.start(1), m.end(1), t))
            taken.append((m.start(1), m.end(1)))
    found.sort(key=lambda x: x[0])
    return found


def overlaps(a: EventTime, lo: str | None, hi: str | None) -> bool:
    """Whether time `a` intersects [lo, hi] (open ends allowed). Unknown times never match a filter."""
    if a.start is None:
        return lo is None and hi is None
    a_end = a.end or a.start
    if lo is not None and a_end < lo:
        return False
    if hi is not None and a.start > hi:
        return False
    return True


def days_between(a: EventTime, b: EventTime) -> float | None:
    """Gap in days between two normalised times (0 when they overlap); None when either is unknown."""
    if a.start is None or b.start is None:
        return None
    a0, a1 = date.fromisoformat(a.start), date.fromisoformat(a.end or a.start)
    b0, b1 = date.fromisoformat(b.start), date.fromisoformat(b.end or b.start)
    if a1 < b0:
        return float((b0 - a1).days)
    if b1 < a0:
        return float((a0 - b1).days)
    return 0.0
