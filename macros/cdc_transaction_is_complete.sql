{% macro cdc_transaction_is_complete(marker_count, end_sequence, distinct_sequence_count) %}
    {#-
        True when a transaction is complete (DESIGN.md §6.1): its feed sends no end markers
        (marker_count = 0), or the end marker arrived and so did every sequence number up to
        it (formats/qlik_kafka_messages.md, "when is a transaction complete").
    -#}
    ({{ marker_count }} = 0 or (
        {{ end_sequence }} is not null
        and {{ distinct_sequence_count }} >= {{ end_sequence }}
    ))
{% endmacro %}
