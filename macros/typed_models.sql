{% macro cdc_catalog_column_types(feed, source_schema, source_table) %}
    {#-
        The catalog's columns of one table as rows (column_name, spark_type) in ordinal order
        (the seeds of cdc_catalog_seeds). Raises a compiler error naming the seed when it has
        none. Empty at parse time.
    -#}
    {%- set columns = [] -%}
    {%- set seeds = cdc_catalog_seeds() -%}
    {%- if execute and load_relation(seeds[0]) is not none -%}
        {%- set query -%}
            select column_name, spark_type
            from (
                {%- for seed in seeds %}
                select * from {{ seed }}
                {%- if not loop.last %} union all{% endif %}
                {%- endfor %}
            )
            where
                feed = {{ cdc_string_literal(feed) }}
                and source_schema = {{ cdc_string_literal(source_schema) }}
                and source_table = {{ cdc_string_literal(source_table) }}
            order by ordinal
        {%- endset -%}
        {%- set columns = run_query(query).rows -%}
        {%- if columns | length == 0 -%}
            {{ exceptions.raise_compiler_error(
                "the catalog seeds (seeds/cdc_columns.csv; seeds/demo/ while the demo is on) have no columns for " ~ feed ~ " " ~ source_schema ~ "." ~ source_table
                ~ ": add them (or run `cdc scaffold`) or delete this model file."
            ) }}
        {%- endif -%}
    {%- endif -%}
    {{ return(columns) }}
{% endmacro %}


{% macro cdc_typed_current_state(feed, source_schema, source_table) %}
    {#-
        Body of a typed per-table model (models/marts/tables/<feed>__<schema>__<table>.sql):
        the table's live rows from current_state, one column per catalog column
        (seeds/cdc_columns.csv, in ordinal order), cast from canonical text to its spark_type,
        plus primary_key, last_change_position and last_committed_at.
    -#}
    {{ cdc_typed_rows(
        'current_state', feed, source_schema, source_table,
        ['primary_key'], ['last_change_position', 'last_committed_at']
    ) }}
{% endmacro %}


{% macro cdc_typed_history(feed, source_schema, source_table) %}
    {#-
        Body of a typed history model (models/marts/tables/<feed>__<schema>__<table>__history.sql,
        a view): the table's SCD type 2 versions from the history mart, one column per catalog
        column cast from canonical text to its spark_type, with valid_from / valid_to (UTC commit
        times), the opening and closing change positions, is_current and is_deleted.
    -#}
    {{ cdc_typed_rows(
        'history', feed, source_schema, source_table,
        ['version_id', 'primary_key'],
        ['valid_from', 'valid_to', 'valid_from_position', 'valid_to_position',
         'opened_by_operation', 'closed_by_operation', 'is_current', 'is_deleted']
    ) }}
{% endmacro %}


{% macro cdc_typed_rows(mart, feed, source_schema, source_table, leading_columns, trailing_columns) %}
    {#-
        SELECT of one table's rows of a long mart (`mart`: current_state or history, whose `row`
        maps column → canonical text) with the catalog's columns cast to their spark_type
        between `leading_columns` and `trailing_columns` (lists of the mart's column names).
    -#}
    {%- for seed in cdc_catalog_seeds() %}
    -- depends_on: {{ seed }}
    {%- endfor %}
    {%- set columns = cdc_catalog_column_types(feed, source_schema, source_table) %}

with

mart_rows as (
    select * from {{ ref(mart) }}
),

table_rows as (
    select * from mart_rows
    where
        feed = {{ cdc_string_literal(feed) }}
        {%- if mart == 'current_state' %}
        and table_key = '{{ cdc_table_key(feed, source_schema, source_table) }}'
        {%- endif %}
        and source_schema = {{ cdc_string_literal(source_schema) }}
        and source_table = {{ cdc_string_literal(source_table) }}
),

typed as (
    select
        {%- for name in leading_columns %}
        {{ name }},
        {%- endfor %}
        {%- for column in columns %}
        cast(row[{{ cdc_string_literal(column[0]) }}] as {{ column[1] }}) as {{ cdc_quote_identifier(column[0] | lower) }},
        {%- endfor %}
        {{ trailing_columns | join(',\n        ') }}
    from table_rows
)

select * from typed
{% endmacro %}
