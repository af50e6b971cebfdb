{% macro cdc_generation() %}
    {#-
        The generation of this dbt invocation: its start time (UTC) as sortable text
        YYYYMMDDTHHMMSSffffff. change_log rows are stamped with the generation that applied
        them, and the state models remember the last generation they consumed.
    -#}
    {{ return(run_started_at.strftime('%Y%m%dT%H%M%S%f')) }}
{% endmacro %}


{% macro cdc_state_watermark() %}
    {#-
        The last generation whose change_log rows the state models have applied: the
        state_generation of int_key_state, read when the calling model compiles. An empty string
        when int_key_state does not exist yet or the caller is not an incremental run (every
        change is new then).
    -#}
    {%- if not execute or not is_incremental() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set state = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_key_state') -%}
    {%- if state is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set rows = run_query('select coalesce(max(state_generation), \'\') as generation from ' ~ state).rows -%}
    {{ return(rows[0][0] if rows else '') }}
{% endmacro %}


{% macro cdc_order_less(left, right) %}
    {#-
        SQL boolean: does event `left` sort before event `right`? By event_order (change
        position, file, record index), then event_rank (a table reset sorts before a row change
        at the same order, so a full load's first row survives the reset it starts).
    -#}
    ({{ left }}.event_order < {{ right }}.event_order
        or ({{ left }}.event_order = {{ right }}.event_order and {{ left }}.event_rank < {{ right }}.event_rank))
{% endmacro %}


{% macro cdc_overlay(row, image) %}
    {#-
        SQL map: `image` laid over `row` (DESIGN.md §6.3): columns present in the image take its
        value (an explicit NULL included), absent columns keep the row's value. A null row is
        an empty one.
    -#}
    map_concat(
        map_filter(coalesce({{ row }}, cast(map() as map<string, string>)), (k, v) -> not map_contains_key({{ image }}, k)),
        {{ image }}
    )
{% endmacro %}


{% macro cdc_version(event, row, is_deleted) %}
    {#- SQL struct: one row version opened by `event` (see cdc_fold_versions). -#}
    named_struct(
        'opened_order', {{ event }}.event_order,
        'opened_at', {{ event }}.committed_at,
        'operation', {{ event }}.operation,
        'row', {{ row }},
        'is_deleted', {{ is_deleted }}
    )
{% endmacro %}


{% macro cdc_key_events(relation) %}
    {#-
        Rows (feed, source_schema, source_table, primary_key, event) of the row events of the
        change_log rows in `relation` (a CTE name), for cdc_fold_versions (DESIGN.md §6):
        INSERT and LOAD are SET (the row becomes the after image), UPDATE is OVERLAY, DELETE is
        REMOVE. An UPDATE whose before image has another key (before_primary_key) is a REMOVE of
        the old key and a SET of the new key with the before image overlaid by the after image.
        LOAD events carry their transaction (load_transaction), so that the reset of a full load
        is not applied to the keys the load itself sets (see cdc_applicable_resets).
    -#}
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', case
                when operation = 'DELETE' then 'REMOVE'
                when operation != 'UPDATE' then 'SET'
                when before_primary_key is not null and before_primary_key != primary_key then 'SET'
                else 'OVERLAY'
            end,
            'image', case
                when operation = 'DELETE' then before_image
                when operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
                    then {{ cdc_overlay('before_image', 'after_image') }}
                else after_image
            end,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', case when operation = 'LOAD' then transaction_id end
        ) as event
    from {{ relation }}
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    union all
    select
        feed,
        source_schema,
        source_table,
        before_primary_key as primary_key,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', 'REMOVE',
            'image', before_image,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', cast(null as string)
        ) as event
    from {{ relation }}
    where
        operation = 'UPDATE'
        and before_primary_key is not null
        and before_primary_key != primary_key
{% endmacro %}


{% macro cdc_fold_versions(events, initial_row, initial_versions) %}
    {#-
        SQL array of row versions: the events (array of cdc_key_events structs plus table
        resets) sorted by cdc_order_less and applied in order to `initial_row` (map, null when
        the key has no live row), appending to `initial_versions`. SET opens a version with the
        image, OVERLAY opens one with cdc_overlay of the current row, REMOVE (DELETE, old key of
        a key change, TRUNCATE, start of a full LOAD) opens a deleted version that keeps the
        last values, or does nothing when there is no live row. A DELETE of a key never seen
        opens a deleted version with its before image, so the key's last event is on record.
        Each version is struct(opened_order, opened_at, operation, row, is_deleted).
    -#}
    aggregate(
        array_sort(
            {{ events }},
            (l, r) -> case
                when {{ cdc_order_less('l', 'r') }} then -1
                when {{ cdc_order_less('r', 'l') }} then 1
                else 0
            end
        ),
        named_struct('row', {{ initial_row }}, 'versions', {{ initial_versions }}),
        (acc, e) -> case
            when e.kind = 'SET' and {{ cdc_same_row('acc.row', 'e.image') }} then acc
            when e.kind = 'OVERLAY' and {{ cdc_same_row('acc.row', cdc_overlay('acc.row', 'e.image')) }} then acc
            when e.kind = 'SET' then named_struct(
                'row', e.image,
                'versions', concat(acc.versions, array({{ cdc_version('e', 'e.image', 'false') }}))
            )
            when e.kind = 'OVERLAY' then named_struct(
                'row', {{ cdc_overlay('acc.row', 'e.image') }},
                'versions', concat(acc.versions, array({{ cdc_version('e', cdc_overlay('acc.row', 'e.image'), 'false') }}))
            )
            when acc.row is not null then named_struct(
                'row', cast(null as map<string, string>),
                'versions', concat(acc.versions, array({{ cdc_version('e', 'acc.row', 'true') }}))
            )
            when size(acc.versions) = 0 and e.image is not null then named_struct(
                'row', cast(null as map<string, string>),
                'versions', concat(acc.versions, array({{ cdc_version('e', 'e.image', 'true') }}))
            )
            else acc
        end,
        acc -> acc.versions
    )
{% endmacro %}


{% macro cdc_version_type() %}
    {#- The SQL type of one row version (see cdc_fold_versions). -#}
    struct<
        opened_order: struct<change_position: string, source_file: string, record_index: bigint>,
        opened_at: timestamp,
        operation: string,
        row: map<string, string>,
        is_deleted: boolean
    >
{% endmacro %}


{% macro cdc_same_row(row, other) %}
    {#- SQL boolean: is `row` live (not null) and equal to `other`, column by column (maps do not compare in Spark). -#}
    ({{ row }} is not null and {{ other }} is not null
        and to_json(array_sort(map_entries({{ row }}))) = to_json(array_sort(map_entries({{ other }}))))
{% endmacro %}


{% macro cdc_applicable_resets(resets, events) %}
    {#-
        SQL array: the table resets (`resets`, reset events of int_table_resets) that apply to a
        key with row events `events`: a TRUNCATE always; the reset of a full load only when the
        key has no LOAD row in that load (a key the load sets again keeps its history open, and
        a version opens only if the load changed it).
    -#}
    filter(
        coalesce({{ resets }}, array()),
        r -> r.load_transaction is null
        or not exists(coalesce({{ events }}, array()), e -> e.load_transaction <=> r.load_transaction)
    )
{% endmacro %}
