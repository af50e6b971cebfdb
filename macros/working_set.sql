{% macro cdc_working_set() %}
    {#-
        The ingest batches this run's staging models read, per feed (ADR 0007), as rows
        (kind, feed, ingest_batch_id) read from small tables when the calling model compiles:

        - ('all', none, none): every batch of every feed: on the first run, with
          --full-refresh, or when a state table is missing;
        - ('all', feed, none): every batch of the feed, for a feed whose new files
          sort before files already applied (a late file of a GoldenGate trail, a HiRDB
          SQLTXT stream or a Linkexpress feed, whose transactions follow file order);
        - ('new', none, batch): committed batches not yet in int_staged_batches;
        - ('from', feed, batch): the feed's batches from the earliest batch holding a record of
          a transaction still pending (pending_changes.transaction_first_batch_id), so that
          open transactions are grouped again with the records that close them;
        - ('from', feed, batch): the feed's latest applied batch, whose last records may begin
          a transaction that has no change row yet (a GoldenGate before image at a file's end).

        Re-reading an applied batch is harmless: change_log appends a change_id once.
        Empty at parse time.
    -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set staged = cdc_model_relation('int_staged_batches') -%}
    {%- set pending = cdc_model_relation('pending_changes') -%}
    {%- if flags.FULL_REFRESH or staged is none or pending is none or cdc_model_relation('change_log') is none -%}
        {{ return([('all', none, none)]) }}
    {%- endif -%}
    {%- set ordered_feeds = ["''"] -%}
    {%- for feed, spec in var('cdc_feeds', {}).items() -%}
        {%- if spec.get('format') in ('goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract') -%}
            {%- do ordered_feeds.append("'" ~ feed ~ "'") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set query -%}
        with

        files as (
            select
                feed,
                ingest_batch_id,
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
                min(transaction_first_batch_id) as first_batch_id
            from {{ pending }}
            group by feed
        ),

        latest_applied as (
            select
                feed,
                max(ingest_batch_id) as first_batch_id
            from applied_files
            where rows > 0
            group by feed
        )

        select 'all' as kind, feed, cast(null as string) as ingest_batch_id from late_feeds
        union all
        select 'new' as kind, cast(null as string) as feed, ingest_batch_id from new_batches
        union all
        select 'from' as kind, feed, first_batch_id from pending_from
        union all
        select 'from' as kind, feed, first_batch_id from latest_applied
    {%- endset -%}
    {%- set rows = [] -%}
    {%- for row in run_query(query).rows -%}
        {%- do rows.append((row[0], row[1], row[2])) -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}


{% macro cdc_working_batches() %}
    {#-
        SQL predicate on raw table rows (columns feed, ingest_batch_id): the row is in this run's
        working set (cdc_working_set). Conditions on ingest_batch_id alone prune the raw
        tables' batch partitions. 'false' when there is nothing to read (no state to carry and
        no new batch); 'true' at parse time.
    -#}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set conditions = [] -%}
    {%- set new_batches = [] -%}
    {%- set first_batches = {} -%}
    {%- for kind, feed, batch in cdc_working_set() -%}
        {%- if kind == 'all' and feed is none -%}
            {{ return('true') }}
        {%- elif kind == 'all' -%}
            {%- do first_batches.update({feed: ''}) -%}
        {%- elif kind == 'new' -%}
            {%- do new_batches.append("'" ~ batch ~ "'") -%}
        {%- elif feed not in first_batches or batch < first_batches[feed] -%}
            {%- do first_batches.update({feed: batch}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for feed, batch in first_batches | dictsort -%}
        {%- if batch == '' -%}
            {%- do conditions.append("feed = '" ~ feed ~ "'") -%}
        {%- else -%}
            {%- do conditions.append("(feed = '" ~ feed ~ "' and ingest_batch_id >= '" ~ batch ~ "')") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if new_batches -%}
        {%- do conditions.append('ingest_batch_id in (' ~ new_batches | join(', ') ~ ')') -%}
    {%- endif -%}
    {{ return('(' ~ (conditions | join(' or ') if conditions else 'false') ~ ')') }}
{% endmacro %}
