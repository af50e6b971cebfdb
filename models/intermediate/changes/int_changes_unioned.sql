{#-
    Every staged feed format's changes in one relation (canonical change event shape): the
    staging models of the formats cdc_feeds configures (cdc_feed_formats; all five when it
    configures none). The others are disabled and cost nothing.
-#}

with

{% for format in cdc_feed_formats() %}
    {{ format }}_changes as (
        select * from {{ ref('stg_' ~ format ~ '__changes') }}
    ),

{% endfor -%}

unioned as (
    {%- for format in cdc_feed_formats() %}
        select {{ cdc_change_columns() | join(', ') }} from {{ format }}_changes
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
)

select * from unioned
