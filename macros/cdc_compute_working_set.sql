{% macro cdc_compute_working_set() %}
    {#-
        The ingest batches (and records) this run's staging models read, per feed (ADR 0007), as
        rows (kind, feed, ingest_batch_id, source_file, record_offset) computed from small tables
        (the manifest, int_staged_batches, int_changes_pending) when int_working_set compiles, once
        per run:

        - ('all', none, none, none, none): every batch of every feed: on the first run, with
          --full-refresh, or when a state table is missing;
        - ('all', feed, none, none, none): every batch of the feed, for a feed whose new files
          sort before files already applied (a late file of a GoldenGate trail, a HiRDB
          SQLTXT stream or a Linkexpress feed, whose transactions follow file order), and for
          a feed with a file restaged by `cdc restage` (status 'restaged');
        - ('new', none, batch, none, none): committed batches not yet in int_staged_batches;
        - ('from', feed, batch, file, offset): the feed's records from the first record of a
          transaction still pending (by file name, then byte offset), in the batches from the
          earliest one holding such a record (int_changes_pending.transaction_first_record,
          transaction_first_batch_id), so that open transactions are grouped again with the
          records that close them, and no transaction applied before is read in part;
        - ('from', feed, batch, file, offset): a GoldenGate feed's records from the last
          transaction start (TransInd 0 or 3) of its latest applied trail file, in the batches
          from the first that read the file: that transaction may have no change row yet (a
          before image whose after image is in the file's next part).

        Re-reading an applied batch is harmless: change_log appends a change_id once.
        Empty at parse time.
    -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set staged = cdc_model_relation('int_staged_batches') -%}
    {%- set trail_relation = api.Relation.create(schema=var('cdc_raw_schema'), identifier='raw_goldengate_trail') -%}
    {%- set pending = cdc_model_relation('int_changes_pending') -%}
    {%- if flags.FULL_REFRESH or staged is none or pending is none or cdc_model_relation('int_changes_logged') is none -%}
        {{ return([('all', none, none, none, none)]) }}
    {%- endif -%}
    {#- the feeds whose late files and trail parts the query looks for: its parts for a kind
        of feed no feed is are left out (a smaller plan for the run's first query,
        on a JVM still cold; ADR 0010) -#}
    {%- set ordered_feeds = [] -%}
    {%- set trail_feeds = [] -%}
    {%- for feed, spec in cdc_feeds().items() -%}
        {%- if spec.get('format') in ('goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract') -%}
            {%- do ordered_feeds.append(cdc_string_literal(feed)) -%}
        {%- endif -%}
        {%- if spec.get('format') == 'goldengate_trail' -%}
            {%- do trail_feeds.append(cdc_string_literal(feed)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set query -%}
        with

        files as (
            select
                feed,
                ingest_batch_id,
                source_file,
                byte_start,
                rows,
                status,
                regexp_extract(source_file, '[^/]+$', 0) as file_name
            from {{ source('cdc', 'raw_ingested_files') }}
            where ingest_batch_id != '00000000T000000000000'
        ),

        applied as (
            select distinct ingest_batch_id from {{ staged }}
        ),

        new_batches as (
            select distinct files.ingest_batch_id
            from files
            left anti join applied on files.ingest_batch_id = applied.ingest_batch_id
        ),

        applied_files as (
            select files.*
            from files
            left semi join applied on files.ingest_batch_id = applied.ingest_batch_id
        ),

        new_files as (
            select files.*
            from files
            left semi join new_batches on files.ingest_batch_id = new_batches.ingest_batch_id
        ),

        late_feeds as (
            {%- if ordered_feeds %}
            select distinct new_files.feed
            from new_files
            inner join applied_files
                on
                    new_files.feed = applied_files.feed
                    -- a HiRDB stream is SQLTXT_<server>_<destination> without a numbered suffix
                    and regexp_replace(new_files.file_name, '\\.[0-9]+$', '')
                    = regexp_replace(applied_files.file_name, '\\.[0-9]+$', '')
            where
                new_files.byte_start = 0
                and new_files.status != 'duplicate'  -- a re-delivery is not read
                and applied_files.file_name > new_files.file_name
                and new_files.feed in ({{ ordered_feeds | join(', ') }})
            union
            {%- endif %}
            -- records of a file decoded again by `cdc restage` sit among applied ones
            select new_files.feed
            from new_files
            where new_files.status = 'restaged'
        ),

        pending_from as (
            select
                feed,
                min(transaction_first_batch_id) as first_batch_id,
                min(transaction_first_record) as first_record
            from {{ pending }}
            group by feed
        ){% if trail_feeds %},

        latest_trail_files as (
            select
                feed,
                max(source_file) as source_file
            from applied_files
            where rows > 0 and feed in ({{ trail_feeds | join(', ') }})
            group by feed
        ),

        latest_trail_batches as (
            select
                applied_files.feed,
                applied_files.source_file,
                min(applied_files.ingest_batch_id) as first_batch_id
            from applied_files
            inner join latest_trail_files
                on
                    applied_files.feed = latest_trail_files.feed
                    and applied_files.source_file = latest_trail_files.source_file
            group by applied_files.feed, applied_files.source_file
        )
        {%- endif %}

        select
            'all' as kind, feed, cast(null as string) as ingest_batch_id,
            cast(null as string) as source_file, cast(null as bigint) as record_offset
        from late_feeds
        union all
        select
            'new' as kind, cast(null as string) as feed, ingest_batch_id,
            cast(null as string) as source_file, cast(null as bigint) as record_offset
        from new_batches
        union all
        select 'from' as kind, feed, first_batch_id, first_record.source_file, first_record.record_offset
        from pending_from
        {%- if trail_feeds %}
        union all
        select 'trail' as kind, feed, first_batch_id, source_file, cast(null as bigint) as record_offset
        from latest_trail_batches
        {%- endif %}
    {%- endset -%}
    {%- set rows = [] -%}
    {%- for row in run_query(query).rows -%}
        {%- if row[0] == 'trail' -%}
            {#- the last transaction start of the trail's latest file (literal predicates: the
                raw table's batch partitions and row groups are pruned) -#}
            {%- set start_query -%}
                select coalesce(max(record_offset), 0)
                from {{ trail_relation }}
                where
                    feed = {{ cdc_string_literal(row[1]) }} and ingest_batch_id >= {{ cdc_string_literal(row[2]) }}
                    and source_file = {{ cdc_string_literal(row[3]) }} and trans_ind in (0, 3)
            {%- endset -%}
            {%- do rows.append(('from', row[1], row[2], row[3], run_query(start_query).rows[0][0])) -%}
        {%- else -%}
            {%- do rows.append((row[0], row[1], row[2], row[3], row[4])) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}
