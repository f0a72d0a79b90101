"""Wikitext -> the prose a reader of the article sees, as sentences (the Wikipedia reader's half
that turns an article into text; `albert.data.corpus` reads the dump).

mwparserfromhell parses; this module decides what each node shows. Beyond dropping markup:

- Comments and extension tags (<ref>, <math>, <gallery>, <nowiki> ...) are taken out before
  parsing, as MediaWiki's preprocessor does: their contents are opaque to the page around them,
  which mwparserfromhell does not model, so a stray '' inside a reference swallowed the prose
  after it.
- Templates that carry a sentence's words are rendered ({{convert}}, {{lang}}, {{nowrap}},
  dashes, {{as of}}, dates, currencies, fractions, {{coord}}, flags, ships, {{sortname}}, letters
  ...); pronunciation templates are dropped with the brackets and separators they leave; every
  other template is dropped, and where that leaves a gap in its sentence ("it lies at .", "a
  bestseller in and Spain", "See also ." after a category link) the sentence has a hole.
- Sections that list references rather than say anything (References, Notes, Further reading,
  Bibliography, External links, See also ...) are left out.
- What the parser left as text (tables, file links, templates, quote markup it could not match)
  is stripped.
- A sentence with a hole nothing can fill (a <math> formula, a chemical formula, an age that
  depends on today's date, a template or link whose words are gone) is dropped, and so is a
  sentence that still carries markup; both are counted, so the loss is visible.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from typing import NamedTuple

import mwparserfromhell
from mwparserfromhell.nodes import (
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)

from albert.data.text import split_sentences

# Private-use characters (stripped from the input first) mark, until the sentences are cut, where
# something unrenderable stood, where a pronunciation was dropped, and where a template or link
# was dropped (a hole only where its sentence misses it: _tidy decides).
HOLE = "\ue000"
_GONE = "\ue001"
_DROPPED = "\ue002"

# Paragraphs shorter than this are headings, captions or list debris, not prose.
MIN_WORDS = 4

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# Extension tags (and <includeonly>): MediaWiki cuts these out before it parses the page.
_EXT_DROPPED = ("ref", "references", "gallery", "timeline", "imagemap", "templatedata",
                "templatestyles", "graph", "mapframe", "maplink", "syntaxhighlight", "source",
                "pre", "inputbox", "categorytree", "indicator", "charinsert", "section",
                "includeonly")
# Formulas, scores and hieroglyphs: text a sentence needs and plain text cannot show.
_EXT_HOLES = ("math", "chem", "ce", "score", "hiero")
_EXT_NAMES = "|".join(sorted(_EXT_DROPPED + _EXT_HOLES + ("nowiki",), key=len, reverse=True))
_EXT_TAG = re.compile(rf"<({_EXT_NAMES})(?=[\s/>])[^>]*?(?:/>|>(.*?)</\1\s*>)", re.I | re.S)
_EXT_LONE = re.compile(rf"</?({_EXT_NAMES})(?=[\s/>])[^>]*>", re.I)
_NOWIKI_ESCAPES = str.maketrans({c: f"&#{ord(c)};" for c in "[]{}|'=_*#:~"})

_MAGIC_WORD = re.compile(r"__[A-Z]+__")  # behaviour switches such as __NOTOC__
# Tags whose contents are no prose (those the preprocessor misses, e.g. made by a template).
_DROPPED_TAGS = frozenset(_EXT_DROPPED) | {"table", "hr"}
_NUMBER = re.compile(r"[-−+]?\d+(?:[.,]\d+)?")

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_YES = ("y", "yes", "on", "true", "1")


# -- before parsing ------------------------------------------------------------------------------


def preprocess(wikitext: str) -> str:
    """What MediaWiki's preprocessor removes before parsing: comments, and extension tags with
    their contents (formulas become a hole; <nowiki> keeps its text, escaped)."""
    text = wikitext.replace(HOLE, "").replace(_GONE, "").replace(_DROPPED, "")
    text = _COMMENT.sub("", text)
    text = _EXT_TAG.sub(_extension, text)
    # An unclosed tag shows as literal text in MediaWiki; here it goes, and a formula's is a hole.
    return _EXT_LONE.sub(lambda m: HOLE if m.group(1).lower() in _EXT_HOLES else "", text)


def _extension(m: re.Match) -> str:
    name = m.group(1).lower()
    if name in _EXT_HOLES:
        return HOLE
    if name == "nowiki":
        return html.escape(m.group(2) or "", quote=False).translate(_NOWIKI_ESCAPES)
    return ""


# -- rendering -----------------------------------------------------------------------------------


class _Args:
    """A template's parameters, rendered on demand: a(1) is the first positional one."""

    def __init__(self, renderer: _Renderer, template, math: bool):
        self._render = functools.partial(renderer.render, math=math)
        self.positional: dict[int, object] = {}
        self.named: dict[str, object] = {}
        for param in template.params:
            key = str(param.name).strip()
            if key.isdigit():
                self.positional[int(key)] = param.value
            else:
                self.named[key.lower()] = param.value

    def __call__(self, index: int) -> str:
        value = self.positional.get(index)
        return self._render(value).strip() if value is not None else ""

    def get(self, key: str) -> str:
        value = self.named.get(key)
        return self._render(value).strip() if value is not None else ""

    def yes(self, key: str) -> bool:
        return self.get(key).lower() in _YES

    @property
    def count(self) -> int:
        return max(self.positional, default=0)

    def all(self) -> list[str]:
        return [self(i) for i in range(1, self.count + 1)]


class _Renderer:
    def __init__(self, namespaces):
        self.namespaces = namespaces

    def render(self, code, math: bool = False) -> str:
        """The text a reader sees of a parsed wikitext tree. `math`: inside a formula template,
        where a superscript is a power and a template this module cannot show is a hole."""
        return self.render_nodes(code.nodes, math)

    def render_nodes(self, nodes, math: bool = False) -> str:
        out: list[str] = []
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.value)
            elif isinstance(node, Template):
                out.append(self._template(node, math))
            elif isinstance(node, Wikilink):
                out.append(self._link(node))
            elif isinstance(node, ExternalLink):
                if node.title is not None:
                    out.append(self.render(node.title, math))
            elif isinstance(node, Tag):
                out.append(self._tag(node, out, math))
            elif isinstance(node, HTMLEntity):
                out.append(node.normalize())
            elif isinstance(node, Heading):
                out.append("\n")
            # Comments and template arguments ({{{1}}}) show nothing.
        return "".join(out)

    def _tag(self, node, out: list[str], math: bool) -> str:
        name = str(node.tag).strip().lower()
        if name in _EXT_HOLES:
            return HOLE
        if name == "br":
            return " " if math else "\n"
        if name in _DROPPED_TAGS or node.contents is None:
            return ""
        inner = self.render(node.contents, math)
        if name == "sup":
            before = next((piece for piece in reversed(out) if piece), "")
            # 10<sup>6</sup> is a power, 1<sup>st</sup> and km<sup>2</sup> read as they are.
            if math or (before[-1:].isdigit() and _NUMBER.fullmatch(inner.strip())):
                return "^" + inner.strip()
        return inner

    def _link(self, link) -> str:
        title = str(link.title).strip()
        label = link.text
        if title.startswith(":"):  # [[:Category:X]] is a plain link to the page, not a category
            title = title[1:]
        elif ":" in title:
            prefix = title.split(":", 1)[0].strip().lower()
            if prefix in self.namespaces.dropped:
                return _DROPPED
            if prefix in self.namespaces.other or (prefix.isalpha() and prefix.islower()
                                                   and 2 <= len(prefix) <= 3):
                # Another namespace, or an interlanguage link ([[fr:Paris]]): a label only.
                return self.render(label) if label is not None else ""
        if label is not None:
            return self.render(label)
        return self.render(link.title).lstrip(":")

    def _template(self, template, math: bool) -> str:
        raw_name = str(template.name)
        name = " ".join(raw_name.replace("_", " ").split()).lower()
        if name.startswith("template:"):
            name = name[len("template:"):].strip()
        if ":" in name and not name.startswith("#"):
            function = name.split(":", 1)[0]
            if function in _COLON_FUNCTIONS:
                inner = self.render(mwparserfromhell.parse(raw_name.split(":", 1)[1]), math)
                return _COLON_FUNCTIONS[function](inner.strip())
        handler = _TEMPLATES.get(name) or _family(name)
        if handler is None:
            return HOLE if math or name in _HOLE_TEMPLATES or name.startswith(
                ("#expr", "#time")) else _DROPPED
        if isinstance(handler, str):
            return handler
        return handler(_Args(self, template, math or name in _MATH_TEMPLATES))


# -- templates that carry text -------------------------------------------------------------------

_CONVERT_RANGES = {"-": "–", "–": "–", "to": " to ", "to(-)": " to ", "and": " and ",
                   "and(-)": " and ", "or": " or ", "by": " by ", "x": " × ", "×": " × ",
                   "+": " + ", "+/-": " ± ", "±": " ± ", ", and": ", and ", ", or": ", or "}
# Unit codes that convert shows with other characters; every other code shows as written.
_CONVERT_UNITS = {"km2": "km²", "sqkm": "km²", "m2": "m²", "cm2": "cm²", "sqmi": "sq mi",
                  "sqft": "sq ft", "sqin": "sq in", "sqyd": "sq yd", "m3": "m³", "km3": "km³",
                  "cuft": "cu ft", "cuyd": "cu yd", "cuin": "cu in", "F": "°F", "C": "°C",
                  "degF": "°F", "degC": "°C", "acre": "acres"}


def _convert_unit(code: str) -> str:
    for prefix, word in (("e3", "thousand "), ("e6", "million "), ("e9", "billion ")):
        if code.startswith(prefix) and len(code) > 2:
            return word + _CONVERT_UNITS.get(code[2:], code[2:])
    return _CONVERT_UNITS.get(code, code)


def _convert(a: _Args) -> str:
    """{{convert|1500|km|mi}} -> '1500 km': the value and unit as written (the converted value in
    brackets is the template's arithmetic); ranges and compound inputs (5 ft 11 in) too."""
    parts = a.all()
    if not parts:
        return ""
    text, i = parts[0], 1
    while i + 1 < len(parts) and parts[i] in _CONVERT_RANGES:
        text += _CONVERT_RANGES[parts[i]] + parts[i + 1]
        i += 2
    if i < len(parts) and parts[i]:
        text += " " + _convert_unit(parts[i])
        i += 1
        # {{convert|5|ft|11|in|m}}: a number followed by a unit continues the input.
        while (i + 1 < len(parts) and _NUMBER.fullmatch(parts[i])
               and parts[i + 1] and not _NUMBER.fullmatch(parts[i + 1])):
            text += f" {parts[i]} {_convert_unit(parts[i + 1])}"
            i += 2
    return text


def _date(year: str, month: str, day: str, day_first: bool) -> str:
    if month.isdigit() and 1 <= int(month) <= 12:
        month = _MONTHS[int(month) - 1]
    day = day.lstrip("0") or day
    if not month:
        return year
    if not day:
        return f"{month} {year}".strip()
    return f"{day} {month} {year}" if day_first else f"{month} {day}, {year}"


def _as_of(a: _Args) -> str:
    if a.get("alt"):
        return a.get("alt")
    # {{as of}} writes day-first unless df=US.
    date = _date(a(1), a(2), a(3), day_first=a.get("df").lower() not in ("us", "mdy"))
    lead = "" if a.yes("bare") else ("as of" if a.yes("lc") else "As of")
    return " ".join(p for p in (lead, a.get("pre"), date) if p) + a.get("post")


def _ymd(a: _Args) -> str:
    # {{birth date|1950|3|2}}: month first unless df=y; the age some of these add is left out,
    # being true only on the day the page was read.
    return _date(a(1), a(2), a(3), day_first=a.yes("df"))


def _sic(a: _Args) -> str:
    text = "".join(a.all())
    if a.yes("hide"):
        return text
    return f"{text} [sic]" if text else "[sic]"


def _frac(a: _Args) -> str:
    parts = [p for p in a.all() if p]
    if len(parts) == 1:
        return "1/" + parts[0]
    if len(parts) == 2:
        return f"{parts[0]}/{parts[1]}"
    if len(parts) >= 3:
        return f"{parts[0]} {parts[1]}/{parts[2]}"
    return ""


def _val(a: _Args) -> str:
    """{{val|1.5|0.2|e=6|u=kg}} -> '1.5±0.2×10^6 kg'."""
    text = a.get("p") + a(1)
    if a(2) and a(3):
        text += f"+{a(2).lstrip('+')}−{a(3).lstrip('-−')}"
    elif a(2):
        text += "±" + a(2)
    if a.get("e"):
        text += "×10^" + a.get("e")
    unit = a.get("u") or a.get("ul")
    per = a.get("up") or a.get("upl")
    return text + (" " + unit if unit else "") + ("/" + per if per else "") + a.get("s")


def _height(a: _Args) -> str:
    # {{height|ft=6|in=2}}: the measures as written, in the template's order.
    return " ".join(f"{a.get(unit)} {unit}" for unit in ("m", "cm", "ft", "in") if a.get(unit))


def _ordinal(a: _Args) -> str:
    number = a(1)
    if not number.isdigit():
        return number
    tens, last = int(number) % 100, int(number) % 10
    suffix = "th" if 11 <= tens <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(last, "th")
    return number + suffix


def _nihongo(a: _Args) -> str:
    extra = ", ".join(p for p in (a(2), a(3)) if p)
    if not a(1):
        return extra
    return f"{a(1)} ({extra})" if extra else a(1)


def _currency(symbol: str) -> Callable[[_Args], str]:
    return lambda a: symbol + a(1) if a(1) else symbol


def _first(a: _Args) -> str:
    return a(1)


def _second(a: _Args) -> str:
    return a(2)


def _last(a: _Args) -> str:
    return a(a.count)


def _quote(a: _Args) -> str:
    text = a.get("text") or a.get("quote") or a(1)
    return f"\n{text}\n" if text else ""


def _degrees(values: list[str], direction: str) -> str | None:
    """['57', '18', '22'], 'N' -> 57°18′22″N; None when these are no degrees."""
    if not 1 <= len(values) <= 3 or not all(_NUMBER.fullmatch(v) for v in values):
        return None
    return "".join(v + unit for v, unit in zip(values, "°′″", strict=False)) + direction


def _coord(a: _Args) -> str:
    """{{coord|57|18|22|N|4|27|32|W}} -> '57°18′22″N 4°27′32″W' and {{coord|43.65|-79.38}} ->
    '43.65°N 79.38°W': the coordinates as written (the template's conversion to the other form
    is its arithmetic). display=title shows them by the page title only, not in the text."""
    if a.get("display").lower().replace(" ", "") in ("title", "t"):
        return _DROPPED
    # Parameters such as type:city or region:US say what the place is; they show nothing.
    parts = [p for p in a.all() if p and ":" not in p]
    turns = [i for i, p in enumerate(parts) if p.upper() in ("N", "S", "E", "W")]
    if len(turns) >= 2:
        i, j = turns[:2]
        lat = _degrees(parts[:i], parts[i].upper())
        lon = _degrees(parts[i + 1:j], parts[j].upper())
    elif len(parts) >= 2 and all(_NUMBER.fullmatch(p) for p in parts[:2]):
        lat = _degrees([parts[0].lstrip("+-−")], "S" if parts[0][0] in "-−" else "N")
        lon = _degrees([parts[1].lstrip("+-−")], "W" if parts[1][0] in "-−" else "E")
    else:
        lat = lon = None
    return f"{lat} {lon}" if lat and lon else HOLE


# The country names {{flag}} and its family show for the codes articles use most (ISO 3166,
# IOC and FIFA codes); a code not listed is a hole rather than a wrong name.
_COUNTRY_CODES = {code: name for name, codes in (
    ("United States", "US USA"), ("United Kingdom", "UK GB GBR"), ("England", "ENG"),
    ("Scotland", "SCO"), ("Wales", "WAL"), ("Northern Ireland", "NIR"), ("France", "FR FRA"),
    ("Germany", "DE GER DEU"), ("Italy", "IT ITA"), ("Spain", "ES ESP"),
    ("Portugal", "PT POR PRT"), ("Netherlands", "NL NED NLD"), ("Belgium", "BE BEL"),
    ("Switzerland", "CH SUI CHE"), ("Austria", "AT AUT"), ("Ireland", "IE IRL"),
    ("Sweden", "SE SWE"), ("Norway", "NO NOR"), ("Denmark", "DK DEN DNK"), ("Finland", "FI FIN"),
    ("Iceland", "IS ISL"), ("Poland", "PL POL"), ("Czech Republic", "CZ CZE"),
    ("Slovakia", "SK SVK"), ("Hungary", "HU HUN"), ("Romania", "RO ROU"),
    ("Bulgaria", "BG BUL BGR"), ("Greece", "GR GRE GRC"), ("Serbia", "RS SRB"),
    ("Croatia", "HR CRO HRV"), ("Slovenia", "SI SLO SVN"), ("Ukraine", "UA UKR"),
    ("Russia", "RU RUS"), ("Belarus", "BY BLR"), ("Turkey", "TR TUR"), ("Israel", "IL ISR"),
    ("Egypt", "EG EGY"), ("Iran", "IR IRI IRN"), ("Iraq", "IQ IRQ"),
    ("Saudi Arabia", "SA KSA SAU"), ("India", "IN IND"), ("Pakistan", "PK PAK"),
    ("China", "CN CHN"), ("Japan", "JP JPN"), ("South Korea", "KR KOR"),
    ("North Korea", "KP PRK"), ("Taiwan", "TW TPE TWN"), ("Hong Kong", "HK HKG"),
    ("Thailand", "TH THA"), ("Vietnam", "VN VIE VNM"), ("Philippines", "PH PHI PHL"),
    ("Indonesia", "ID INA IDN"), ("Malaysia", "MY MAS MYS"), ("Singapore", "SG SGP"),
    ("Australia", "AU AUS"), ("New Zealand", "NZ NZL"), ("Canada", "CA CAN"),
    ("Mexico", "MX MEX"), ("Brazil", "BR BRA"), ("Argentina", "AR ARG"), ("Chile", "CL CHI CHL"),
    ("Colombia", "CO COL"), ("Peru", "PE PER"), ("Venezuela", "VE VEN"), ("Cuba", "CU CUB"),
    ("South Africa", "ZA RSA ZAF"), ("Nigeria", "NG NGR NGA"), ("Kenya", "KE KEN"),
    ("Ethiopia", "ET ETH"), ("Morocco", "MA MAR"), ("Algeria", "DZ ALG DZA"),
    ("Soviet Union", "URS"), ("East Germany", "GDR"), ("West Germany", "FRG"),
    ("Yugoslavia", "YUG"), ("Czechoslovakia", "TCH"),
) for code in codes.split()}
_DISAMBIGUATED = re.compile(r"\s*\([^()]*\)$")  # "Georgia (country)" shows as "Georgia"


def _country(name: str) -> str:
    if name in _COUNTRY_CODES:
        return _COUNTRY_CODES[name]
    if re.fullmatch(r"[A-Z]{2,3}", name):
        return HOLE
    return _DISAMBIGUATED.sub("", name)


def _flag(a: _Args) -> str:
    """{{flag|France}}, {{flagcountry|FRA}}: the flag's icon, then the country's name."""
    return a.get("name") or (_country(a(1)) if a(1) else "")


def _flag_athlete(a: _Args) -> str:
    # {{flagathlete|Jane Doe|USA}} shows the athlete and the country's code.
    return f"{a(1)} ({a(2)})" if a(1) and a(2) else a(1)


def _ship_name(prefix: str, name: str, ident: str, shown: str) -> str:
    """A ship's name as the ship templates show it: 'HMS Dreadnought (1906)'. `shown` picks
    the parts as the templates' display code does: 4 the prefix, 2 the name, 1 the ID, added;
    any other text is shown in their place."""
    if shown and not shown.isdigit():
        return shown
    bits = int(shown) if shown and 0 < int(shown) < 8 else 7
    words = [w for bit, w in ((4, prefix), (2, name)) if bits & bit and w]
    if bits & 1 and ident:
        words.append(f"({ident})" if words else ident)
    return " ".join(words)


def _ship(a: _Args) -> str:
    # {{ship|HMS|Dreadnought|1906}}; {{ship|German battleship|Bismarck}}
    return _ship_name(a(1), a(2), a(3), a(4))


def _prefixed_ship(prefix: str) -> Callable[[_Args], str]:
    # {{USS|Enterprise|CV-6}}: {{ship}} with its prefix in the template's name
    return lambda a: _ship_name(prefix, a(1), a(2), a(3))


def _sortname(a: _Args) -> str:
    # {{sortname|John|Smith}} -> 'John Smith' (the sort key and link target show nothing)
    return " ".join(p for p in (a(1), a(2)) if p)


# Ship prefixes that are templates of their own ({{USS|...}}, {{HMS|...}} ...).
_SHIP_PREFIXES = ("USS", "USNS", "USCGC", "USAT", "USRC", "HMS", "HMAS", "HMCS", "HMNZS", "HMT",
                  "HMY", "HMHS", "HMIS", "SS", "RMS", "MV", "SMS", "HNLMS", "HDMS", "HNoMS",
                  "HSwMS", "INS", "ARA", "JS", "ROKS", "TCG", "PNS")


_TEMPLATES: dict[str, str | Callable[[_Args], str]] = {
    **dict.fromkeys(("convert", "cvt"), _convert),
    **dict.fromkeys(("lang", "langx", "script"), _second),
    **dict.fromkeys(("transl", "transliteration"), lambda a: a(3) if a.count >= 3 else a(2)),
    **dict.fromkeys(("nowrap", "nobr", "nowr", "nobreak", "no wrap", "small", "smaller", "big",
                     "larger", "large", "midsize", "em", "strong", "var", "abbr", "abbrlink",
                     "tooltip", "nobold", "noitalic", "not a typo", "proper name", "as written",
                     "visible anchor", "vanchor", "mvar", "math", "chem2", "chem name", "sc",
                     "small caps", "smallcaps", "unicode", "serif", "sans-serif", "sup", "sub",
                     "date"), _first),
    **dict.fromkeys(("resize", "font color", "color", "colour"), _last),
    "ill": lambda a: a.get("lt") or a(1),
    "interlanguage link": lambda a: a.get("lt") or a(1),
    "chem": lambda a: "".join(a.all()),
    "nihongo": _nihongo,
    "sic": _sic,
    **dict.fromkeys(("frac", "sfrac"), _frac),
    "val": _val,
    **dict.fromkeys(("as of", "asof"), _as_of),
    **dict.fromkeys(("start date", "end date", "birth date", "death date", "birth date and age",
                     "death date and age", "start date and age", "end date and age", "dob",
                     "bda", "birth-date", "death-date"), _ymd),
    **dict.fromkeys(("birth year and age", "death year and age"), _first),
    **dict.fromkeys(("circa", "c.", "ca."), lambda a: "c. " + a(1) if a(1) else "c."),
    **dict.fromkeys(("floruit", "fl."), lambda a: "fl. " + a(1) if a(1) else "fl."),
    **dict.fromkeys(("reign", "r."),
                    lambda a: "r. " + "–".join(p for p in (a(1), a(2)) if p)),
    "height": _height,
    "ordinal": _ordinal,
    **dict.fromkeys(("quote", "blockquote", "quotation", "cquote", "quote box"), _quote),
    **dict.fromkeys(("us$", "usd"), _currency("US$")),
    **dict.fromkeys(("gbp", "£"), _currency("£")),
    **dict.fromkeys(("€", "euro", "eur"), _currency("€")),
    **dict.fromkeys(("¥", "jpy", "yen"), _currency("¥")),
    **dict.fromkeys(("inr", "₹"), _currency("₹")),
    **dict.fromkeys(("a$", "aud"), _currency("A$")),
    **dict.fromkeys(("ca$", "cad"), _currency("CA$")),
    **dict.fromkeys(("ndash", "en dash", "endash", "–"), "–"),
    **dict.fromkeys(("mdash", "em dash", "emdash", "—"), "—"),
    **dict.fromkeys(("snd", "spnd", "sndash", "spaced ndash", "spaced en dash", "dash"), " – "),
    **dict.fromkeys(("spaced mdash", "spaced em dash"), " — "),
    **dict.fromkeys(("nbsp", "thinsp", "spaces", "space", "nbsp;", "hair space"), " "),
    **dict.fromkeys(("·", "dot", "middot"), " · "),
    **dict.fromkeys(("•", "bull", "bullet"), " • "),
    "nbhyph": "-",
    **dict.fromkeys(("minus", "−"), "−"),
    **dict.fromkeys(("×", "times"), "×"),
    **dict.fromkeys(("degree", "°"), "°"),
    "pi": "π",
    "=": "=",
    "'": "'",
    "'s": "'s",
    "' \"": "'\"",
    "\" '": "\"'",
    "okina": "ʻ",
    # Letters and marks written as templates: transliterations' ayin and hamza, quote marks.
    **dict.fromkeys(("ayin", "ʿ", "ʿayn", "ayn"), "ʿ"),
    **dict.fromkeys(("hamza", "ʾ"), "ʾ"),
    "saltillo": "ꞌ",
    **dict.fromkeys(("lsquo", "‘"), "‘"),
    **dict.fromkeys(("rsquo", "’"), "’"),
    **dict.fromkeys(("ldquo", "“"), "“"),
    **dict.fromkeys(("rdquo", "”"), "”"),
    "coord": _coord,
    **dict.fromkeys(("flag", "flagu", "flagcountry", "flag country", "fb"), _flag),
    "flagathlete": _flag_athlete,
    "ship": _ship,
    **{prefix.lower(): _prefixed_ship(prefix) for prefix in _SHIP_PREFIXES},
    "sortname": _sortname,
    "shy": "",
    "zwsp": "",
}
_MATH_TEMPLATES = frozenset({"math", "mvar", "val"})
# Their text depends on the day the page is read or on a calculation: a hole, not a deletion.
_HOLE_TEMPLATES = frozenset({
    "age", "age in years", "age in years and days", "age in years, months and days",
    "age in days", "years ago", "inflation", "format price", "formatprice", "to usd",
    "currentyear", "currentmonth", "currentday", "currentmonthname", "numberofarticles",
})
_PRONUNCIATION = frozenset({"respell", "audio", "audio-ipa", "audio-nohelp", "pronunciation",
                            "pron", "pron-en", "hear", "listen", "pronounced"})
_COLON_FUNCTIONS: dict[str, Callable[[str], str]] = {
    "formatnum": lambda s: s, "lc": str.lower, "uc": str.upper,
    "lcfirst": lambda s: s[:1].lower() + s[1:], "ucfirst": lambda s: s[:1].upper() + s[1:],
}


def _family(name: str) -> str | Callable[[_Args], str] | None:
    """Templates named by a pattern: {{lang-fr}}, {{IPA-de}}, {{IPAc-en}} ..."""
    if name.startswith("ipa") or name in _PRONUNCIATION:
        return _GONE
    if name.startswith("lang-"):
        return _first
    return None


# -- after rendering -----------------------------------------------------------------------------

_QUOTES = re.compile(r"'{2,}")
_EXTERNAL = re.compile(r"\[(?:https?:|ftp:)?//[^\s\]]+\s*([^\]\n]*)\]")
_LINK_LABEL = re.compile(r"\[\[([^\[\]|\n]*)\|([^\[\]\n]*)\]\]")
_LINK = re.compile(r"\[\[:?([^\[\]|\n]*)\]\]")
_TEMPLATE_LEFT = re.compile(r"\{\{[^{}]*\}\}")
_HTML_TAG = re.compile(
    r"</?(?:ref|references|span|div|small|big|sup|sub|br|center|font|u|s|i|b|em|strong|abbr|"
    r"blockquote|poem|p|code|nowiki|gallery|table|tr|td|th|caption|onlyinclude|noinclude|"
    r"includeonly|del|ins|cite|var|q|kbd|samp|tt|strike|dfn|bdi|bdo|wbr|hr|li|ul|ol|dl|dd|dt|"
    r"mark|ruby|rt|rp|time|data)\b[^<>]*>", re.I)
_HEADING_LEFT = re.compile(r"^\s*=+[^=\n].*=+\s*$", re.M)
_LIST_LEFT = re.compile(r"^[ \t]*[*#;:]+[ \t]*", re.M)
_ENTITY_LEFT = re.compile(r"&(?:[a-zA-Z]{2,8}|#\d{2,6}|#x[0-9a-fA-F]{2,5});")
# A pronunciation's label ("UK: /.../", "pronounced /.../"), and pronunciations run together
# ("/a/ or /b/").
# "X is pronounced /.../": the pronunciation is what the sentence says, a hole.
_GONE_SAID = re.compile(rf"\b(?:is|are|was|were|be|been)\s+(?:also\s+)?pronounced\s+{_GONE}")
_GONE_LABEL = re.compile(
    rf"(?:\b(?:also\s+)?pronounced\s+|\b[A-Za-z][\w.]*(?: [A-Za-z][\w.]*)?:\s*)?{_GONE}")
_GONE_RUN = re.compile(rf"{_GONE}(?:(?:\s|[,;/~]|\bor\b|\balso\b)*{_GONE})+")
_GONE_CLEANUP = (
    (re.compile(rf"\(\s*{_GONE}\s*[,;]\s*"), "("),
    (re.compile(rf"\s*[,;]\s*{_GONE}\s*\)"), ")"),
    (re.compile(rf"\s*[,;]\s*{_GONE}(?=\s*[,;])"), ""),
    (re.compile(rf"[ \t]*{_GONE}"), ""),
)
# A dropped template or link left a gap where its sentence needs words: after a word that cannot
# end a phrase, before punctuation, a closing bracket or a conjunction ("it lies at .", "a
# bestseller in and Spain", "See also ."), with a space before it as a template of words has.
# Elsewhere ("large.{{citation needed}}", "where it is{{citation needed}}.", a file link on its
# own line) nothing is missing.
_NEEDS_WORDS = ("at|in|on|of|from|to|by|with|into|onto|for|near|as|than|between|among|via|per|"
                "across|under|over|against|within|including|like|see|also|the|its|their|his|"
                "her|this|these|those|and|or|nor|but|is|are|was|were|be|been|being|(?-i:an?)")
_DROPPED_RUN = re.compile(rf"{_DROPPED}(?:[ \t]*{_DROPPED})+")
_DROPPED_GAP = re.compile(
    rf"(?<![\w'’-])((?:{_NEEDS_WORDS})[ \t]+){_DROPPED}"
    r"(?=[ \t]*(?:[.,;:!?)\]]|$|(?:and|or|but|nor)\b))", re.I | re.M)
_DROPPED_BEFORE_MARK = re.compile(rf"[ \t]*{_DROPPED}(?=[.,;:!?)])")
# Brackets a dropped template emptied: "Alabama ( ; ) is", "(; born 1950)".
_BRACKETS = (
    (re.compile(r"[ \t]*\([\s,;:–-]*\)"), ""),
    (re.compile(r"\(\s*[,;]\s*"), "("),
    (re.compile(r"\s*[,;]\s*\)"), ")"),
)
# Abbreviations before a number: {{circa}}, {{floruit}} and {{reign}} write c., fl. and r.
_BEFORE_NUMBER = re.compile(r"(?:^|[\s(])(?:c|ca|fl|r|b|d|pop|approx|est|no|No|p|pp|vol)\.$")
_ONLY_HOLES = re.compile(rf"[\s.,;:{HOLE}]*{HOLE}[\s.,;:{HOLE}]*")
# What no prose has: markup the parser and the cleanup above could not take apart.
_MARKUP = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|\||''|\[(?:https?:)?//|" + _HTML_TAG.pattern,
                     re.I)


@functools.lru_cache(maxsize=16)
def _dropped_link(dropped: frozenset) -> re.Pattern:
    names = "|".join(re.escape(n) for n in sorted(dropped, key=len, reverse=True))
    return re.compile(rf"\[\[\s*:?\s*(?:{names})\s*:", re.I)


def _drop_bracketed(text: str, start: re.Pattern) -> str:
    """Removes every [[...]] that `start` opens, nested links included; one left open runs to
    the end of its line."""
    out, pos = [], 0
    while (m := start.search(text, pos)) is not None:
        out.append(text[pos:m.start()])
        depth, i, end = 0, m.start(), None
        while i < len(text):
            if text.startswith("[[", i):
                depth, i = depth + 1, i + 2
            elif text.startswith("]]", i):
                depth, i = depth - 1, i + 2
                if depth == 0:
                    end = i
                    break
            else:
                i += 1
        if end is None:
            newline = text.find("\n", m.start())
            end = len(text) if newline < 0 else newline
        out.append(_DROPPED)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _drop_table_lines(text: str) -> str:
    """Tables the parser left as text: every line of a {| ... |} block, and where a block is not
    closed, its row and cell lines (| and !)."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    opened: list[int] = []
    for i, line in enumerate(lines):
        start = line.lstrip(" \t:")
        # A header cell (!) only inside a table: prose can start with one (the !Kung).
        if start.startswith(("{|", "|")) or (opened and start.startswith("!")):
            keep[i] = False
        if start.startswith("{|"):
            opened.append(i)
        elif start.startswith("|}") and opened:
            first = opened.pop()
            if not opened:
                keep[first:i + 1] = [False] * (i + 1 - first)
    return "\n".join(line for line, kept in zip(lines, keep, strict=True) if kept)


def _tidy(text: str, namespaces) -> str:
    text = _ENTITY_LEFT.sub(lambda m: html.unescape(m.group(0)), text)
    text = _MAGIC_WORD.sub("", text).replace("\u00a0", " ")
    text = _drop_table_lines(text)
    text = _HEADING_LEFT.sub("", text)
    text = _LIST_LEFT.sub("", text)
    text = _drop_bracketed(text, _dropped_link(frozenset(namespaces.dropped)))
    text = _EXTERNAL.sub(r"\1", text)
    text = _LINK_LABEL.sub(r"\2", text)
    text = _LINK.sub(r"\1", text)
    for _ in range(8):  # innermost first, so nested templates go too
        text, n = _TEMPLATE_LEFT.subn("", text)
        if not n:
            break
    text = _HTML_TAG.sub("", text)
    text = _QUOTES.sub("", text)
    text = _GONE_SAID.sub(HOLE, text)
    text = _GONE_LABEL.sub(_GONE, text)
    text = _GONE_RUN.sub(_GONE, text)
    for pattern, replacement in _GONE_CLEANUP:
        text = pattern.sub(replacement, text)
    text = _DROPPED_RUN.sub(_DROPPED, text)
    text = _DROPPED_GAP.sub(lambda m: m.group(1) + HOLE, text)
    text = _DROPPED_BEFORE_MARK.sub("", text).replace(_DROPPED, "")
    for pattern, replacement in _BRACKETS:
        text = pattern.sub(replacement, text)
    return text


def _paragraphs(text: str) -> list[str]:
    """Lines -> paragraphs, where a formula on a line of its own joins the sentence it belongs
    to: the line before when that does not end a sentence ("... is given by"), and the line
    after when it starts in lower case ("where n is ...")."""
    out: list[str] = []
    after_formula = False
    for line in text.split("\n"):
        line = " ".join(line.split())
        if not line:
            out.append("")
            after_formula = False
        elif _ONLY_HOLES.fullmatch(line):
            if out and out[-1] and not out[-1].endswith((".", "!", "?")):
                out[-1] += " " + line
            else:
                out.append(line)
            after_formula = True
        elif after_formula and line[0].islower() and out and out[-1]:
            out[-1] += " " + line
            after_formula = False
        else:
            out.append(line)
            after_formula = False
    return [p for p in out if p]


def _split(paragraph: str) -> list[str]:
    """split_sentences, except after an abbreviation before a number ("c. 1900", "pop. 5000")."""
    out: list[str] = []
    for piece in split_sentences(paragraph):
        if out and _BEFORE_NUMBER.search(out[-1]) and piece[:1].isdigit():
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


# -- the article ---------------------------------------------------------------------------------


class Sentences(NamedTuple):
    sentences: list[str]
    with_holes: int  # dropped: something unrenderable stood in them
    with_markup: int  # dropped: markup left that the cleanup could not take apart


def parse(wikitext: str):
    """The mwparserfromhell tree of an article, after MediaWiki's preprocessing (`preprocess`)."""
    return mwparserfromhell.parse(preprocess(wikitext))


# Sections that list sources, works or links rather than say anything: their items ("Smith, J.
# (2000). Letters.") would read as sentences.
_LIST_SECTIONS = frozenset({
    "references", "notes", "footnotes", "citations", "sources", "bibliography", "further reading",
    "external links", "see also", "works cited", "cited works", "cited sources",
    "notes and references", "references and notes", "notes and sources", "explanatory notes",
    "general references", "general and cited references", "reference list", "literature cited",
    "sources and further reading", "selected bibliography", "selected works",
    "selected publications", "publications", "discography", "filmography", "primary sources",
    "secondary sources",
})


def _prose_nodes(code) -> list:
    """The article's nodes less its _LIST_SECTIONS (each to the next heading of its level or
    above)."""
    nodes, skipping = [], 0  # the level of the heading whose section is left out; 0: none
    for node in code.nodes:
        if isinstance(node, Heading):
            if skipping and node.level > skipping:
                continue
            title = " ".join(_QUOTES.sub("", str(node.title)).split())
            skipping = node.level if title.strip(" :.").lower() in _LIST_SECTIONS else 0
        if not skipping:
            nodes.append(node)
    return nodes


def plain_text(code, namespaces) -> str:
    """The readable text of a parsed article (`parse`), paragraphs on lines of their own, less
    the sections that list references (_LIST_SECTIONS). `namespaces` has .dropped (links into
    these vanish: files, categories) and .other (links into these keep their label). Holes are
    still marked with HOLE."""
    return _tidy(_Renderer(namespaces).render_nodes(_prose_nodes(code)), namespaces)


def sentences(text: str, min_words: int = MIN_WORDS) -> Sentences:
    """`plain_text`'s output -> the sentences of its paragraphs of at least `min_words` words,
    less those with a hole or with markup left (counted)."""
    kept, holes, markup = [], 0, 0
    for paragraph in _paragraphs(text):
        if len(paragraph.split(" ")) < min_words:
            continue
        for sentence in _split(paragraph):
            if HOLE in sentence:
                holes += 1
            elif _MARKUP.search(sentence):
                markup += 1
            else:
                kept.append(sentence)
    return Sentences(kept, holes, markup)
