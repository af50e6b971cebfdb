{#-
    One row per table the apply knows the key of: its columns in ordinal order and its key
    columns in key order (DESIGN.md §6.3; issue 46 item 1). A table comes from the catalog
    seeds, or, when the seeds do not have it, from the latest metadata its feed carried
    (stg_cdc__metadata: a Qlik `.dfm`, a Kafka MD message, a GoldenGate TDR or sourcedefs
    entry) when that metadata names key columns. A seed row always wins over the metadata; a
    table whose key nothing names stays out (the changes_of_tables_not_in_catalog warning).
    Header columns of change tables (header__*) are not table columns. metadata_column_names
    are the columns of the table's latest metadata, for every table that has some: the test
    columns_not_in_catalog lists those the seeds lack (source DDL). A table, built once per
    run: every reader of change_log and of the apply reads it.
-#}

with

seed_columns as (
    {%- for seed in cdc_catalog_seeds() %}
        select * from {{ seed }}
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
),

seed_tables as (
    select
        feed,
        source_schema,
        source_table,
        transform(
            array_sort(collect_list(named_struct('ordinal', ordinal, 'column_name', column_name))),
            c -> c.column_name
        ) as column_names,
        transform(
            array_sort(collect_list(
                case
                    when primary_key_position > 0
                        then named_struct('ordinal', primary_key_position, 'column_name', column_name)
                end
            )),
            c -> c.column_name
        ) as key_column_names,
        'seed' as declared_by
    from seed_columns
    group by feed, source_schema, source_table
),

metadata_columns as (
    select * from {{ ref('stg_cdc__metadata') }}
    where not startswith(column_name, 'header__')
),

latest_messages as (
    -- the latest metadata of each table: highest table version, then the latest delivery
    select
        feed,
        source_schema,
        source_table,
        max(named_struct(
            'table_version', coalesce(table_version, -1),
            'ingest_batch_id', ingest_batch_id,
            'source_file', source_file,
            'record_offset', record_offset
        )) as message
    from metadata_columns
    group by feed, source_schema, source_table
),

metadata_tables as (
    select
        metadata_columns.feed,
        metadata_columns.source_schema,
        metadata_columns.source_table,
        transform(
            array_sort(collect_list(named_struct(
                'ordinal', metadata_columns.ordinal, 'column_name', metadata_columns.column_name
            ))),
            c -> c.column_name
        ) as column_names,
        transform(
            array_sort(collect_list(
                case
                    when metadata_columns.primary_key_position > 0
                        then named_struct(
                            'ordinal', metadata_columns.primary_key_position,
                            'column_name', metadata_columns.column_name
                        )
                end
            )),
            c -> c.column_name
        ) as key_column_names,
        min(metadata_columns.metadata_source) as declared_by
    from metadata_columns
    inner join latest_messages
        on
            metadata_columns.feed = latest_messages.feed
            and metadata_columns.source_schema = latest_messages.source_schema
            and metadata_columns.source_table = latest_messages.source_table
            and coalesce(metadata_columns.table_version, -1) = latest_messages.message.table_version
            and metadata_columns.ingest_batch_id = latest_messages.message.ingest_batch_id
            and metadata_columns.source_file = latest_messages.message.source_file
            and metadata_columns.record_offset = latest_messages.message.record_offset
    group by metadata_columns.feed, metadata_columns.source_schema, metadata_columns.source_table
),

seeded_tables as (
    select
        seed_tables.*,
        metadata_tables.column_names as metadata_column_names
    from seed_tables
    left join metadata_tables
        on
            seed_tables.feed = metadata_tables.feed
            and seed_tables.source_schema = metadata_tables.source_schema
            and seed_tables.source_table = metadata_tables.source_table
),

discovered_tables as (
    select
        metadata_tables.*,
        metadata_tables.column_names as metadata_column_names
    from metadata_tables
    left anti join seed_tables
        on
            metadata_tables.feed = seed_tables.feed
            and metadata_tables.source_schema = seed_tables.source_schema
            and metadata_tables.source_table = seed_tables.source_table
    where size(metadata_tables.key_column_names) > 0
),

catalog_tables as (
    select * from seeded_tables
    union all
    select * from discovered_tables
)

select * from catalog_tables
