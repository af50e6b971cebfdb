{#-
    The typed models' YAML against the catalog seeds (ADR 0035): a typed view casts
    cdc_typed_columns (its YAML columns with a `data_type`, under the source name in
    `config.meta.source_column`), for the table its `config.meta` names (`cdc scaffold`
    writes both from the seeds). One row per column where the two differ: a column the seeds
    have and the YAML lacks, one the YAML has and the seeds lack, or another Spark type (an
    empty seed spark_type is string, as cdc scaffold reads it). The fix is `cdc scaffold`,
    which rewrites the YAML from the seeds.

    The typed models' columns come from dbt's graph (the project's files), not from the lake.
    The test hangs off int_staged_batches (depends_on), whose only children are tests: `dbt
    build` makes a node wait for a test when the node descends from all the test's parents,
    so on the seeds alone it held back int_catalog_tables and the whole chain; now it runs
    beside the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

{#- one SQL row literal per typed column of the YAML -#}
{%- set yaml_columns = [] %}
{%- if execute %}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.meta.get('source_table') is not none %}
        {%- for column in cdc_typed_columns(node) %}
            {%- set values = [] %}
            {%- for value in [
                node.name, node.config.meta.feed, node.config.meta.source_schema,
                node.config.meta.source_table, column.source_column, column.data_type
            ] %}
                {%- do values.append(cdc_string_literal(value)) %}
            {%- endfor %}
            {%- do yaml_columns.append('(' ~ values | join(', ') ~ ')') %}
        {%- endfor %}
    {%- endfor %}
{%- endif %}

with

yaml_columns as (
    {%- if yaml_columns %}
        select * from values {{ yaml_columns | join(', ') }}
            as yaml_columns (model_name, feed, source_schema, source_table, column_name, spark_type)
    {%- else %}
    select
        cast(null as string) as model_name,
        cast(null as string) as feed,
        cast(null as string) as source_schema,
        cast(null as string) as source_table,
        cast(null as string) as column_name,
        cast(null as string) as spark_type
    where false
    {%- endif %}
),

typed_tables as (
    select distinct
        model_name,
        feed,
        source_schema,
        source_table
    from yaml_columns
),

seed_columns as (
    {%- for seed in cdc_catalog_seeds() %}
        select
            feed,
            source_schema,
            source_table,
            column_name,
            coalesce(nullif(trim(spark_type), ''), 'string') as spark_type
        from {{ seed }}
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
),

seed_columns_of_typed_tables as (
    select
        typed_tables.model_name,
        seed_columns.*
    from seed_columns
    inner join typed_tables
        on
            seed_columns.feed = typed_tables.feed
            and seed_columns.source_schema = typed_tables.source_schema
            and seed_columns.source_table = typed_tables.source_table
),

differences as (
    select
        coalesce(yaml_columns.model_name, seeded.model_name) as model_name,
        coalesce(yaml_columns.feed, seeded.feed) as feed,
        coalesce(yaml_columns.source_schema, seeded.source_schema) as source_schema,
        coalesce(yaml_columns.source_table, seeded.source_table) as source_table,
        coalesce(yaml_columns.column_name, seeded.column_name) as column_name,
        yaml_columns.spark_type as yaml_spark_type,
        seeded.spark_type as seed_spark_type
    from yaml_columns
    full outer join seed_columns_of_typed_tables as seeded
        on
            yaml_columns.model_name = seeded.model_name
            and yaml_columns.column_name = seeded.column_name
    where
        yaml_columns.column_name is null
        or seeded.column_name is null
        or lower(replace(yaml_columns.spark_type, ' ', '')) != lower(replace(seeded.spark_type, ' ', ''))
)

select * from differences
