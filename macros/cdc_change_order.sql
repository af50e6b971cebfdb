{% macro cdc_change_order(prefix='') %}
    {#-
        The total order of changes inside a feed: change_position, then file name and record
        index (the tie-break of equal positions, e.g. full-load rows), as a struct that
        max_by / min_by and ORDER BY accept.
    -#}
    named_struct(
        'change_position', {{ prefix }}change_position,
        'source_file', {{ prefix }}source_file,
        'record_index', {{ prefix }}record_index
    )
{% endmacro %}
