"""A task's language (issue 64): a rating task and a chat task are made in one language, `zh-CN` or `en` (BCP 47, as
evalcore.core.i18n.LANGS), and their people see the task's guidelines, dimension definitions and questions in it
whatever their browser says. `tasks.lang` and `chat_tasks.lang`: a task made before this version takes its dataset's
language (datasets.language zh... -> zh-CN, en... -> en; any other or none -> en); the dimensions it stored when it
was made stay as they are. `dimension_texts`: a lab's own definition of a dimension per language (`evalcore dimension
describe`), used by a new task in that language in place of the stored description. The statements are idempotent:
a store migrated again from an older version (a test that rewinds schema_version) meets them a second time."""
VERSION = 22

LANG_OF = """CASE WHEN lower(coalesce(d.language, '')) LIKE 'zh%' THEN 'zh-CN' ELSE 'en' END"""

SQL = f"""
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS lang VARCHAR;
ALTER TABLE chat_tasks ADD COLUMN IF NOT EXISTS lang VARCHAR;
UPDATE tasks SET lang = x.lang FROM (SELECT t.task_id, {LANG_OF} AS lang FROM tasks t
    LEFT JOIN datasets d ON d.dataset = t.dataset WHERE t.lang IS NULL) x WHERE tasks.task_id = x.task_id;
UPDATE chat_tasks SET lang = x.lang FROM (SELECT t.task_id, {LANG_OF} AS lang FROM chat_tasks t
    LEFT JOIN datasets d ON d.dataset = t.dataset WHERE t.lang IS NULL) x WHERE chat_tasks.task_id = x.task_id;
CREATE TABLE IF NOT EXISTS dimension_texts (
    dataset     VARCHAR NOT NULL,
    dimension   VARCHAR NOT NULL,
    lang        VARCHAR NOT NULL,     -- zh-CN or en
    description VARCHAR NOT NULL,     -- the dimension's definition in that language, as people rating it read it
    PRIMARY KEY (dataset, dimension, lang)
);
"""
