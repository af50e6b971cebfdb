{{ config(severity='warn') }}

{#-
    Two deliveries of one change position with different content (DESIGN.md §6.5). Staging keeps
    the first delivery of a position and drops exact re-deliveries silently; a re-delivery whose
    content differs means the source replayed something else under the same change sequence,
    and is listed here (a warning: run with --warn-error to fail on it). Only the Qlik formats
    carry their position in the record; the other feeds' positions come from the file name and
    byte offset, where a changed file is refused by staging instead.

    It reads what the run read, not every earlier delivery (issue 45, tests cost what the run's
    changes cost), in two parts:
    - within the run: the raw deliveries of the run's working set (cdc_working_batches, what
      the staging models read) of one position and operation whose data differ, among the
      positions delivered by batches staged since the run before the last one;
    - across runs: a change of the staging models (the first delivery the run read) whose
      images differ from those change_log holds for its change_id (the delivery an earlier run
      logged). The images are what the apply reads; a before image is compared when the
      delivery carries one (a Qlik UPDATE delivered again without its before-image row).
    var cdc_test_scope: all compares every delivery ever staged in the first part.

    Runs after int_staged_batches (depends_on), which runs after change_log's store. A warning
    blocks nothing, so the test hangs off int_staged_batches, a model no other model reads: dbt
    holds back a model for a test only when every model the test reads is upstream of it, so
    it runs beside the apply models instead of between change_log and them.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

{%- set formats = [] %}
{%- for format in ('qlik_change_tables', 'qlik_kafka') if cdc_format_enabled(format) %}
    {%- do formats.append(format) %}
{%- endfor %}
{%- set check_all = cdc_tests_check_all_history() %}

with

change_table_rows as (
    select
        feed,
        header__change_seq as change_position,
        header__change_oper as operation,
        to_json(data) as content,
        source_file,
        ingest_batch_id
    from {{ source('qlik_change_tables', 'raw_qlik_change_tables') }}
    where
        file_kind != 'full_load'
        and {{ 'true' if check_all else cdc_working_batches('qlik_change_tables') }}
),

kafka_messages as (
    select
        feed,
        change_sequence as change_position,
        operation,
        to_json(struct(data, before_data)) as content,
        source_file,
        ingest_batch_id
    from {{ source('qlik_kafka', 'raw_qlik_kafka') }}
    where
        operation != 'REFRESH'
        and {{ 'true' if check_all else cdc_working_batches('qlik_kafka') }}
),

deliveries as (
    select * from change_table_rows
    union all
    select * from kafka_messages
),

conflicts_within_run as (
    select
        feed,
        change_position,
        operation,
        count(distinct content) as variants,
        collect_set(source_file) as source_files
    from deliveries
    group by feed, change_position, operation
    having count(distinct content) > 1 and bool_or({{ cdc_new_batches_predicate() }})
),

logged_changes as (
    -- the deliveries earlier runs logged: a row this run appended is the staged delivery itself
    -- (a first build compares nothing; `dbt test` alone, another invocation, compares them all)
    select * from {{ ref('int_changes_logged') }}
    where applied_generation != '{{ cdc_generation() }}'
),

staged_changes as (
    {%- for format in formats %}
        select change_id, operation, before_image, after_image, source_file
        from {{ ref('stg_' ~ format ~ '__changes') }}
        where operation not in ('LOAD', 'EVENT')
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- else %}
        select
            cast(null as string) as change_id,
            cast(null as string) as operation,
            cast(null as map<string, string>) as before_image,
            cast(null as map<string, string>) as after_image,
            cast(null as string) as source_file
        where false
    {%- endfor %}
),

conflicts_across_runs as (
    -- no broadcast hint: Spark broadcasts the run's changes when they are few (an increment),
    -- and joins by shuffle when they are many (a full build, where a hint ran out of memory)
    select
        logged_changes.feed,
        logged_changes.change_position,
        staged_changes.operation,
        2 as variants,
        array(logged_changes.source_file, staged_changes.source_file) as source_files
    from logged_changes
    inner join staged_changes
        on logged_changes.change_id = staged_changes.change_id
    where
        logged_changes.operation != staged_changes.operation
        or to_json(logged_changes.after_image) is distinct from to_json(staged_changes.after_image)
        or (
            staged_changes.before_image is not null
            and to_json(logged_changes.before_image) is distinct from to_json(staged_changes.before_image)
        )
),

conflicts as (
    select * from conflicts_within_run
    union all
    select * from conflicts_across_runs
)

select * from conflicts
