{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_current_state("goldengate_demo", "SALES", "ORDER_LINES") }}
