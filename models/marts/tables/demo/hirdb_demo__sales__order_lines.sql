{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_current_state("hirdb_demo", "SALES", "ORDER_LINES") }}
