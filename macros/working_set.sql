{% macro cdc_working_set() %}
    {#-
        The ingest batches (and files) this run's staging models read, per feed (ADR 0007), as
        rows (kind, feed, ingest_batch_id, source_file) read from small tables when the calling
        model compiles:

        - ('all', none, none, none): every batch of every feed: on the first run, with
          --full-refresh, or when a state table is missing;
        - ('all', feed, none, none): every batch of the feed, for a feed whose new files
          sort before files already applied (a late file of a GoldenGate trail, a HiRDB
          SQLTXT stream or a Linkexpress feed, whose transactions follow file order);
        - ('new', none, batch, none): committed batches not yet in int_staged_batches;
        - ('from', feed, batch, file): the feed's files from the first file holding a record of
          a transaction still pending, in the batches from the earliest one holding such a record
          (pending_changes.transaction_first_source_file, transaction_first_batch_id), so that
          open transactions are grouped again with the records that close them;
        - ('from', feed, batch, file): a GoldenGate feed's latest applied trail file, from the
          first batch that read it: its last records may begin a transaction that has no change
          row yet (a before image whose after image is in the file's next part).

        Re-reading an applied batch is harmless: change_log appends a change_id once.
        Empty at parse time.
    -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set staged = cdc_model_relation('int_staged_batches') -%}
    {%- set pending = cdc_model_relation('pending_changes') -%}
    {%- if flags.FULL_REFRESH or staged is none or pending is none or cdc_model_relation('change_log') is none -%}
        {{ return([('all', none, none, none)]) }}
    {%- endif -%}
    {%- set ordered_feeds = ["''"] -%}
    {%- set trail_feeds = ["''"] -%}
    {%- for feed, spec in var('cdc_feeds', {}).items() -%}
        {%- if spec.get('format') in ('goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract') -%}
            {%- do ordered_feeds.append("'" ~ feed ~ "'") -%}
        {%- endif -%}
        {%- if spec.get('format') == 'goldengate_trail' -%}
            {%- do trail_feeds.append("'" ~ feed ~ "'") -%}
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
                and applied_files.file_name > new_files.file_name
                and new_files.feed in ({{ ordered_feeds | join(', ') }})
        ),

        pending_from as (
            select
                feed,
                min(transaction_first_batch_id) as first_batch_id,
                min(transaction_first_source_file) as first_source_file
            from {{ pending }}
            group by feed
        ),

        latest_trail_files as (
            select
                feed,
                max(source_file) as source_file
            from applied_files
            where rows > 0 and feed in ({{ trail_feeds | join(', ') }})
            group by feed
        ),

        latest_trail_from as (
            select
                applied_files.feed,
                min(applied_files.ingest_batch_id) as first_batch_id,
                min(applied_files.source_file) as first_source_file
            from applied_files
            inner join latest_trail_files
                on
                    applied_files.feed = latest_trail_files.feed
                    and applied_files.source_file = latest_trail_files.source_file
            group by applied_files.feed
        )

        select 'all' as kind, feed, cast(null as string) as ingest_batch_id, cast(null as string) as source_file
        from late_feeds
        union all
        select 'new' as kind, cast(null as string) as feed, ingest_batch_id, cast(null as string) as source_file
        from new_batches
        union all
        select 'from' as kind, feed, first_batch_id, first_source_file from pending_from
        union all
        select 'from' as kind, feed, first_batch_id, first_source_file from latest_trail_from
    {%- endset -%}
    {%- set rows = [] -%}
    {%- for row in run_query(query).rows -%}
        {%- do rows.append((row[0], row[1], row[2], row[3])) -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}


{% macro cdc_working_batches() %}
    {#-
        SQL predicate on raw table rows (columns feed, ingest_batch_id, source_file): the row is
        in this run's working set (cdc_working_set). Conditions on ingest_batch_id prune the raw
        tables' batch partitions, conditions on source_file skip parquet row groups by their
        statistics. 'false' when there is nothing to read (no state to carry and no new batch);
        'true' at parse time.
    -#}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set conditions = [] -%}
    {%- set new_batches = [] -%}
    {#- per feed: (first batch, first file) to read from; ('', '') reads every batch -#}
    {%- set carried = {} -%}
    {%- for kind, feed, batch, source_file in cdc_working_set() -%}
        {%- if kind == 'all' and feed is none -%}
            {{ return('true') }}
        {%- elif kind == 'all' -%}
            {%- do carried.update({feed: ('', '')}) -%}
        {%- elif kind == 'new' -%}
            {%- do new_batches.append("'" ~ batch ~ "'") -%}
        {%- elif feed in carried -%}
            {%- do carried.update({feed: ([carried[feed][0], batch] | min, [carried[feed][1], source_file] | min)}) -%}
        {%- else -%}
            {%- do carried.update({feed: (batch, source_file)}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for feed, first in carried | dictsort -%}
        {%- if first[0] == '' -%}
            {%- do conditions.append("feed = '" ~ feed ~ "'") -%}
        {%- else -%}
            {%- do conditions.append(
                "(feed = '" ~ feed ~ "' and ingest_batch_id >= '" ~ first[0]
                ~ "' and source_file >= '" ~ first[1] | replace("'", "\\'") ~ "')"
            ) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if new_batches -%}
        {%- do conditions.append('ingest_batch_id in (' ~ new_batches | join(', ') ~ ')') -%}
    {%- endif -%}
    {{ return('(' ~ (conditions | join(' or ') if conditions else 'false') ~ ')') }}
{% endmacro %}
