"""Datasets get a language from their texts when none was declared (evalcore.core.language; docs/importing.md, "Items").

Before this version a dataset imported without a `language` (an items JSONL without the optional field, a
DSTC10 file without --language) was stored with none and scored as Chinese: char tokens and METEOR's
language-independent mode, also for English text. Here every dataset stored without a language gets the one
its items' contexts and references show, by evalcore.core.language's rule (the same ranges and thresholds, in
SQL): `en`, `zh`, `ja`, `ko`, or still none when the texts do not say (no letters, another script). The new
column `language_source` says where a language came from: 'declared' (by the data or the importer),
'detected' (from the texts), NULL when there is none. Scores already cached keep their signatures (the
tokenizer and METEOR's mode are in them), so values computed under the old char tokens are never mixed
with the new ones: `score` computes the new signature's values next time.
"""
from evalcore.core.language import sql_counts, sql_decision

VERSION = 10

TEXTS = """
    SELECT dataset, CASE WHEN json_valid(context) AND json_type(context) = 'ARRAY'
                         THEN array_to_string(json_extract_string(context, '$[*]'), ' ') ELSE context END AS t
    FROM items
    UNION ALL SELECT dataset, text AS t FROM item_references
"""

SQL = f"""
ALTER TABLE datasets ADD COLUMN language_source VARCHAR;
UPDATE datasets SET language_source = 'declared' WHERE language IS NOT NULL;
UPDATE datasets SET language = d.lang, language_source = 'detected'
FROM (
    SELECT dataset, {sql_decision()} AS lang
    FROM (
        SELECT dataset, {sql_counts('t')}
        FROM ({TEXTS}) texts
        WHERE dataset IN (SELECT dataset FROM datasets WHERE language IS NULL)
        GROUP BY dataset
    ) counts
) d
WHERE datasets.dataset = d.dataset AND datasets.language IS NULL AND d.lang IS NOT NULL;
"""
