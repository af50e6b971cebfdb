{% macro cdc_working_batches(format) %}
    {#- The raw rows in this run's working set, as a predicate (macros/_macros.yml). -#}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set formats = [] -%}
    {%- for spec in cdc_feeds().values() -%}
        {%- do formats.append(spec.get('format')) -%}
    {%- endfor -%}
    {%- if format not in formats -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set conditions = [] -%}
    {%- set new_batches = [] -%}
    {#- per feed: (first batch, first file, first offset) to read from; none reads every batch -#}
    {%- set carried = {} -%}
    {%- for kind, feed, batch, source_file, record_offset in cdc_working_set() -%}
        {%- if kind == 'all' and feed is none -%}
            {{ return('true') }}
        {%- elif kind == 'all' -%}
            {%- do carried.update({feed: none}) -%}
        {%- elif kind == 'new' -%}
            {%- do new_batches.append(cdc_string_literal(batch)) -%}
        {%- elif feed not in carried -%}
            {%- do carried.update({feed: (batch, (source_file, record_offset))}) -%}
        {%- elif carried[feed] is not none -%}
            {%- do carried.update({feed: (
                [carried[feed][0], batch] | min, [carried[feed][1], (source_file, record_offset)] | min
            )}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for feed, first in carried | dictsort -%}
        {%- if first is none -%}
            {%- do conditions.append("feed = " ~ cdc_string_literal(feed)) -%}
        {%- else -%}
            {%- set file = cdc_string_literal(first[1][0]) -%}
            {%- do conditions.append(
                "(feed = " ~ cdc_string_literal(feed) ~ " and ingest_batch_id >= " ~ cdc_string_literal(first[0])
                ~ " and (source_file > " ~ file ~ " or (source_file = " ~ file
                ~ " and record_offset >= " ~ first[1][1] ~ ")))"
            ) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if new_batches -%}
        {%- do conditions.append('ingest_batch_id in (' ~ new_batches | join(', ') ~ ')') -%}
    {%- endif -%}
    {{ return('(' ~ (conditions | join(' or ') if conditions else 'false') ~ ')') }}
{% endmacro %}
